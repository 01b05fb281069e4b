// Package golden runs the golden-file tests of template sets: each case in
// a set's tests folder is an input parent, NAME.yaml, and the exact objects
// it must render, NAME.golden.yaml. It backs `loom test`.
package golden

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render"
)

// GoldenSuffix ends the name of a case's expected output.
const GoldenSuffix = ".golden.yaml"

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
// rewritten to match what renders instead of being compared.
func Run(set *render.Set, update bool) ([]Result, error) {
	testsDir := filepath.Join(set.Dir, render.TestsDir)
	inputs, err := filepath.Glob(filepath.Join(testsDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, in := range inputs {
		if strings.HasSuffix(in, GoldenSuffix) {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		r := runCase(set, in, filepath.Join(testsDir, name+GoldenSuffix), update)
		r.Set, r.Case = set.Dir, name
		results = append(results, r)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Case < results[j].Case })
	return results, nil
}

func runCase(set *render.Set, input, goldenPath string, update bool) Result {
	got, err := RenderFile(set, input, DefaultNamespace)
	if err != nil {
		return Result{Err: err}
	}
	if update {
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

// RenderFile renders every parent in the YAML file at path with set and
// returns the children as one stable YAML stream. Parents that name no
// namespace get namespace.
func RenderFile(set *render.Set, path, namespace string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	parents, err := render.ReadParents(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var all []*unstructured.Unstructured
	for _, p := range parents {
		if p.GetNamespace() == "" {
			p.SetNamespace(namespace)
		}
		children, err := set.Render(p)
		if err != nil {
			return nil, fmt.Errorf("render %s %s/%s: %w", p.GetKind(), p.GetNamespace(), p.GetName(), err)
		}
		all = append(all, children...)
	}
	return render.MarshalStream(all)
}
