package offline

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render"
)

// GoldenSuffix ends the name of a case's expected output.
const GoldenSuffix = ".golden.yaml"

// LookupsSuffix ends the name of the objects a case's lookups find:
// tests/NAME.lookups.yaml beside tests/NAME.yaml. Without one, lookups find
// nothing.
const LookupsSuffix = ".lookups.yaml"

// DefaultNamespace is given to a test parent that names none, as kubectl
// would with the default context.
const DefaultNamespace = "default"

// Result is the outcome of one case.
type Result struct {
	// Set is the template set's folder.
	Set string
	// Case is the case's name (its input file without .yaml).
	Case string
	// Diff is a unified diff (-golden +rendered) when the output differs.
	Diff string
	// Updated is true when the golden file was (re)written.
	Updated bool
	// Err is set when the case could not run at all.
	Err error
}

// Failed reports whether the case failed.
func (r Result) Failed() bool { return r.Err != nil || r.Diff != "" }

// Run runs every case of the set in dir. With update, golden files are
// rewritten to match what renders instead of being compared. Each
// parent's render stops after DefaultTimeout.
func Run(set *render.Set, update bool) ([]Result, error) {
	return RunOptions(set, Options{Update: update, Timeout: DefaultTimeout})
}

// Options are how RunOptions runs a set's cases.
type Options struct {
	// Update rewrites golden files to match what renders instead of
	// comparing them.
	Update bool
	// Timeout stops each parent's render after this long (0: no limit).
	Timeout time.Duration
	// LoomNamespace is Loom's namespace: a Secret of a case's
	// NAME.lookups.yaml in it registers a workload cluster (see
	// Clusters). "" is DefaultLoomNamespace.
	LoomNamespace string
}

// RunOptions is Run with options.
func RunOptions(set *render.Set, o Options) ([]Result, error) {
	testsDir := filepath.Join(set.Dir, render.TestsDir)
	inputs, err := filepath.Glob(filepath.Join(testsDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	ad, err := NewAdmission(set)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, in := range inputs {
		if strings.HasSuffix(in, GoldenSuffix) {
			continue
		}
		if strings.HasSuffix(in, LookupsSuffix) {
			name := strings.TrimSuffix(filepath.Base(in), LookupsSuffix)
			if _, err := os.Stat(filepath.Join(testsDir, name+".yaml")); errors.Is(err, os.ErrNotExist) {
				results = append(results, Result{Set: set.Dir, Case: name,
					Err: fmt.Errorf("%s answers the lookups of no case: there is no %s.yaml", filepath.Base(in), name)})
			}
			continue
		}
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		r := runCase(set, ad, in, filepath.Join(testsDir, name+GoldenSuffix), o)
		r.Set, r.Case = set.Dir, name
		results = append(results, r)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Case < results[j].Case })
	return results, nil
}

func runCase(set *render.Set, ad *Admission, input, goldenPath string, o Options) Result {
	if err := roundTrip(set, input); err != nil {
		return Result{Err: err}
	}
	got, err := renderFile(set, ad, input, DefaultNamespace, o)
	if err != nil {
		return Result{Err: err}
	}
	if o.Update {
		old, _ := os.ReadFile(goldenPath)
		if bytes.Equal(old, got) {
			return Result{}
		}
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			return Result{Err: err}
		}
		return Result{Updated: true}
	}
	want, err := os.ReadFile(goldenPath)
	if errors.Is(err, os.ErrNotExist) {
		return Result{Err: fmt.Errorf("no golden file %s: run with --update to create it", goldenPath)}
	}
	if err != nil {
		return Result{Err: err}
	}
	if bytes.Equal(want, got) {
		return Result{}
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
		FromFile: goldenPath, ToFile: "rendered", Context: 3,
	})
	if err != nil {
		return Result{Err: err}
	}
	return Result{Diff: diff}
}

// roundTrip converts each parent of the case at path, in its own version,
// to every other version the set serves and back (convert.RoundTrip): a
// trip that does not give the parent back, or that needs the conversion
// data for a field the other version has, is an error naming the parent,
// the versions and the fields. A set of one version has no trip to make.
func roundTrip(set *render.Set, path string) error {
	conv := set.Converter()
	if conv == nil {
		return nil
	}
	objs, err := readObjects(path)
	if err != nil {
		return err
	}
	parents, err := CheckParents(set, path, objs)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range parents {
		if err := conv.RoundTrip(p); err != nil {
			errs = append(errs, fmt.Errorf("round trip of %s %s: %w", p.GetKind(), p.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// RenderFile renders every parent in the YAML file at path with set and
// returns the children the controller would apply now, as one stable YAML
// stream. Parents that name no namespace get namespace. Lookups find the
// objects in the case's NAME.lookups.yaml beside path, when there is one
// (see ReadLookups), and its Secrets in DefaultLoomNamespace register the
// workload clusters (see Clusters); children that wait for another are
// left out. When
// the set has a schema, the parents are first admitted as the API server
// would admit them (see Admission).
func RenderFile(set *render.Set, path, namespace string) ([]byte, error) {
	ad, err := NewAdmission(set)
	if err != nil {
		return nil, err
	}
	return renderFile(set, ad, path, namespace, Options{Timeout: DefaultTimeout})
}

func renderFile(set *render.Set, ad *Admission, path, namespace string, o Options) ([]byte, error) {
	objs, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	parents, err := CheckParents(set, path, objs)
	if err != nil {
		return nil, err
	}
	if _, err := ad.Admit(path, parents); err != nil {
		return nil, err
	}
	var reader render.Reader // nil, not a nil *ObjectsReader: lookups find nothing
	lookups := strings.TrimSuffix(path, ".yaml") + LookupsSuffix
	if f, err := os.Open(lookups); err == nil {
		r, err := ReadLookups(f, namespace)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", lookups, err)
		}
		reader = r
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	clusters, err := Clusters(reader, cmp.Or(o.LoomNamespace, DefaultLoomNamespace))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", lookups, err)
	}
	out, err := RenderParents(set, parents, reader, clusters, namespace, o.Timeout)
	if err != nil {
		return nil, err
	}
	return render.MarshalStream(out.Children)
}

// readObjects reads the objects in the YAML file at path.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objs, err := render.ReadParents(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return objs, nil
}
