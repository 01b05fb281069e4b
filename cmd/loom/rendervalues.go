package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render"
)

// valuesFlags are loom render's Helm-style inputs: --values files and
// --set, --set-string values, merged as helm template merges them, make
// the spec of one parent named --name, in place of -f's parent files.
// -f stays kubectl's (a file of objects, here parents), as in every
// other loom command; Helm's -f is --values here.
type valuesFlags struct {
	files, set, setString []string
	name                  string
}

func (v *valuesFlags) register(f *pflag.FlagSet) {
	f.StringArrayVar(&v.files, "values", nil, "a YAML file of values, as helm template's --values: with --set, they make the spec of one parent named --name in place of -f; repeatable, later files win; - reads stdin")
	f.StringArrayVar(&v.set, "set", nil, "a value, as helm's --set: key1=val1,key2.sub=val2; over --values; repeatable")
	f.StringArrayVar(&v.setString, "set-string", nil, "a string value, as helm's --set-string; repeatable")
	f.StringVar(&v.name, "name", "release-name", "with --values or --set: the parent's name (helm template's NAME)")
}

// given reports whether --values, --set or --set-string was used.
func (v *valuesFlags) given() bool {
	return len(v.files)+len(v.set)+len(v.setString) > 0
}

// label names the values in messages, in place of a parent file.
func (v *valuesFlags) label() string { return "--values/--set" }

// parent merges the values as Helm does (files in order, then --set, then
// --set-string) and returns the set's parent with them as its spec.
func (v *valuesFlags) parent(stdin io.Reader, set *render.Set, namespace string) (*unstructured.Unstructured, error) {
	spec := map[string]any{}
	for _, f := range v.files {
		r, err := openFile(stdin, f)
		if err != nil {
			return nil, err
		}
		raw, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		m, err := loader.LoadValues(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		spec = loader.MergeMaps(spec, m)
	}
	for _, s := range v.set {
		if err := strvals.ParseInto(s, spec); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	for _, s := range v.setString {
		if err := strvals.ParseIntoString(s, spec); err != nil {
			return nil, fmt.Errorf("--set-string %s: %w", s, err)
		}
	}
	p := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	p.SetGroupVersionKind(set.ParentGVK())
	p.SetName(v.name)
	p.SetNamespace(namespace)
	// Read back as a parent file is read, so that the spec holds the same
	// types (int64 for whole numbers), not strvals' or YAML's own.
	raw, err := yaml.Marshal(p.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.label(), err)
	}
	parents, err := render.ReadParents(bytes.NewReader(raw))
	if err != nil || len(parents) != 1 {
		return nil, fmt.Errorf("%s: read back the parent: %w", v.label(), err)
	}
	return parents[0], nil
}

// checkParentInputs refuses -f beside --values/--set, and neither.
func checkParentInputs(files []string, v *valuesFlags) error {
	switch {
	case len(files) > 0 && v.given():
		return errors.New("-f names parent files (as kubectl's -f); --values and --set make one parent instead: give one or the other (Helm's -f is --values here)")
	case len(files) == 0 && !v.given():
		return errors.New("give the parents: -f PARENT.yaml, or a chart's values with --values VALUES.yaml and --set")
	}
	return nil
}

// writeSources writes objs as a YAML stream, each document after a
// `# Source:` comment naming its template, as helm template prints them;
// with showOnly, only the documents of those templates (a path in the set,
// or in the chart: templates/x.yaml). A showOnly that matches nothing is
// an error, as in helm template.
func writeSources(w io.Writer, objs []*unstructured.Unstructured, sources, showOnly []string) error {
	matched := make([]bool, len(showOnly))
	var b bytes.Buffer
	for i, o := range objs {
		if len(showOnly) > 0 {
			j := slices.IndexFunc(showOnly, func(s string) bool { return sourceIs(sources[i], s) })
			if j < 0 {
				continue
			}
			matched[j] = true
		}
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("marshal %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n", sources[i])
		b.Write(y)
	}
	for j, ok := range matched {
		if !ok {
			return fmt.Errorf("--show-only %s: no object rendered from that template", showOnly[j])
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// sourceIs reports whether the template source is name: the same path, or
// a chart's template path without the chart's name (templates/x.yaml for
// web/templates/x.yaml), as helm template's --show-only takes it.
func sourceIs(source, name string) bool {
	name = path.Clean(strings.TrimPrefix(name, "./"))
	if source == name {
		return true
	}
	_, rest, ok := strings.Cut(source, "/")
	return ok && rest == name
}
