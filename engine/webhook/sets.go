package webhook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/templatewatch"
)

// ConverterOf returns a loaded set's Converter (nil: the set has none).
type ConverterOf func(*render.Set) Converter

// SetConverter is the ConverterOf of loom run: the set's own converter
// (render.Set.Converter), nil for a set of one version, never a nil
// pointer in a non-nil Converter.
func SetConverter(s *render.Set) Converter {
	if cv := s.Converter(); cv != nil {
		return cv
	}
	return nil
}

// Sets keeps a Registry filled with the converters of the template sets
// under a folder. It loads them itself, apart from the Manager, because
// every replica serves the webhook and a standby runs no Manager; and it
// loads in full only the sets whose loom.yaml declares versions, so that
// the others cost one read of their loom.yaml.
type Sets struct {
	Root     string
	Registry *Registry
	Of       ConverterOf
	// Changed is called after a load that changed the kinds registered
	// (nil: nothing), e.g. to inject the caBundle into a new CRD soon.
	Changed func()
	// dirs maps each set folder loaded to its kind.
	dirs map[string]schema.GroupKind
}

// Load finds the sets under Root and registers the converter of each one
// with versions; a kind whose set is gone, or serves one version now, is
// removed. A set that fails to load keeps the converter it had, and the
// failures are returned joined.
func (s *Sets) Load() error {
	if s.dirs == nil {
		s.dirs = map[string]schema.GroupKind{}
	}
	var dirs []string
	err := filepath.WalkDir(s.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != s.Root && (d.Name() == render.TestsDir || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == config.File {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("find the template sets under %s: %w", s.Root, err)
	}
	seen, changed := map[string]bool{}, false
	var errs []error
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, config.File))
		if err != nil {
			seen[dir] = true // keep what it had
			errs = append(errs, err)
			continue
		}
		c, err := config.Parse(raw)
		if err != nil || len(c.Versions) == 0 {
			seen[dir] = err != nil
			if err != nil {
				errs = append(errs, fmt.Errorf("set %s: %w", dir, err))
			}
			continue
		}
		seen[dir] = true
		set, err := render.Load(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("set %s: %w", dir, err))
			continue
		}
		gk := set.ParentGVK().GroupKind()
		if old, ok := s.dirs[dir]; ok && old != gk {
			s.Registry.Delete(old)
		}
		conv := s.Of(set)
		changed = changed || s.Registry.Get(gk) == nil
		s.Registry.Set(gk, conv)
		s.dirs[dir] = gk
	}
	for dir, gk := range s.dirs {
		if !seen[dir] {
			s.Registry.Delete(gk)
			delete(s.dirs, dir)
			changed = true
		}
	}
	if changed && s.Changed != nil {
		s.Changed()
	}
	return errors.Join(errs...)
}

// Watch loads the sets again each time a file under Root changes (after
// debounce of quiet), until ctx is done; call Load first. Failures are
// logged.
func (s *Sets) Watch(ctx context.Context, debounce time.Duration) error {
	return templatewatch.Run(ctx, s.Root, debounce, func(ctx context.Context) {
		if err := s.Load(); err != nil {
			klog.FromContext(ctx).Error(err, "Some template sets' converters were not reloaded; they keep their last good version")
		}
	})
}
