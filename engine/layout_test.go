package engine_test

import (
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// module is the import path every Loom package starts with.
const module = "github.com/loom-operator/loom/"

// maxEngineImports is how many other engine packages one package may
// import. A sub-package (engine/controller/childcache) counts as its
// top-level package (engine/controller): a stage's rooms are that stage.
const maxEngineImports = 6

// maxPackageLines bounds the packages that grow most, in lines of
// non-test Go: a part that grows gets a room (a sub-package) of its own.
var maxPackageLines = map[string]int{
	// the parent controller, with the Manager that runs one per set
	"controller": 3000,
	// the render stage: a set's load and one parent's render
	"render": 3050,
}

// leaves are the engine packages of shared vocabulary, which import no
// other engine package: a set's configuration, a child's identity, and the
// registered workload clusters.
var leaves = map[string]bool{"config": true, "object": true, "cluster": true}

// stage names the top-level engine package an import path is in, or "".
func stage(path string) string {
	rest, ok := strings.CutPrefix(path, module+"engine/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// enginePackages returns each Go package under engine/ (its directory,
// relative to the module), with its non-test imports.
func enginePackages(t *testing.T) map[string]*build.Package {
	t.Helper()
	pkgs := map[string]*build.Package{}
	err := filepath.WalkDir(".", func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
			return err
		}
		p, err := build.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		if dir != "." {
			pkgs[filepath.ToSlash(filepath.Join("engine", dir))] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestEngineImports holds the package graph to its shape: no engine
// package imports more than maxEngineImports other engine packages, the
// leaves (config, object, cluster) import none, and no stage imports the
// controller that wires them.
func TestEngineImports(t *testing.T) {
	for dir, p := range enginePackages(t) {
		own := stage(module + dir)
		others := map[string]bool{}
		for _, imp := range p.Imports {
			if s := stage(imp); s != "" && s != own {
				others[s] = true
			}
		}
		names := make([]string, 0, len(others))
		for s := range others {
			names = append(names, s)
		}
		sort.Strings(names)
		switch {
		case len(names) > maxEngineImports:
			t.Errorf("%s imports %d other engine packages, more than %d: %s", dir, len(names), maxEngineImports, strings.Join(names, ", "))
		case leaves[own] && len(names) > 0:
			t.Errorf("%s is a leaf but imports %s", dir, strings.Join(names, ", "))
		case own != "controller" && others["controller"]:
			t.Errorf("%s is a stage but imports the controller", dir)
		}
	}
}

// TestPackageSize bounds the packages of maxPackageLines: a part that
// grows gets a room of its own under the package (engine/controller/
// childcache, engine/render/kinds).
func TestPackageSize(t *testing.T) {
	for pkg, most := range maxPackageLines {
		files, err := filepath.Glob(pkg + "/*.go")
		if err != nil || len(files) == 0 {
			t.Fatalf("no engine/%s: %v", pkg, err)
		}
		lines := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines += strings.Count(string(b), "\n")
		}
		if lines > most {
			t.Errorf("engine/%s has %d lines of non-test Go, more than %d: give a part a room of its own", pkg, lines, most)
		}
	}
}
