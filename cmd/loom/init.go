package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/render"
)

func newInitCommand() *cobra.Command {
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init DIR --kind KIND [--chart PATH]",
		Short: "Make a template set: loom.yaml, templates or a Helm chart, and a golden test case",
		Long: `Init makes a template set in DIR, which must not exist or be empty.

Without --chart it scaffolds a plain set of Loom templates: a loom.yaml that
names the parent kind with a small schema (spec.message), a template
configmap.yaml that renders a ConfigMap from it, and a golden test case,
tests/example.yaml with its tests/example.golden.yaml. Edit them from there.

With --chart, from a Helm chart, a folder or a .tgz: it copies the chart
into DIR, writes a loom.yaml that names the parent kind and the chart,
declares the cluster-scoped kinds the chart renders with its default values
(clusterScoped) and the kinds its templates look up (lookups), and writes
a golden test case, tests/example.yaml (a parent with an empty spec: the
chart's defaults) with its tests/example.golden.yaml. Review loom.yaml:
what it declares is what a user who may create a parent may make Loom do.

Init builds the set in a temporary folder beside DIR and renames it into
place only when the set loads and its golden case is written: a failed
run leaves nothing behind.

Then: 'loom crd -t DIR' prints the parent's CRD, 'loom test DIR' checks
the golden case, and 'loom run --templates DIR' runs it.

` + exitStatusPlain,
		Example: `  loom init sets/greeter --kind Greeter --api-version greet.example.com/v1
  loom init sets/podinfo --chart ./podinfo --kind Podinfo --api-version apps.example.com/v1
  loom init sets/shop --chart shop-1.2.3.tgz --kind Shop`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.OutOrStdout(), args[0])
		},
	}
	cmd.Flags().StringVar(&o.chart, "chart", "", "the Helm chart: a folder or a .tgz (default: a plain set of Loom templates)")
	cmd.Flags().StringVar(&o.kind, "kind", "", "the parent's kind, e.g. Podinfo")
	cmd.Flags().StringVar(&o.apiVersion, "api-version", "charts.loom.dev/v1alpha1", "the parent's group/version")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

// initOptions are loom init's flags.
type initOptions struct {
	chart, kind, apiVersion string
}

// run makes the set in a temporary folder beside dir, checks that it
// loads and writes its golden case, then renames it to dir.
func (o *initOptions) run(out io.Writer, dir string) error {
	if err := checkInitDir(dir); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	// Hidden, so that loom run over the parent folder does not load it.
	tmp, err := os.MkdirTemp(parent, ".loom-init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The set's folder keeps its final name (the set is named after it).
	work := filepath.Join(tmp, filepath.Base(filepath.Clean(dir)))
	var cfg config.Config
	if o.chart != "" {
		cfg, err = o.writeChartSet(work)
	} else {
		cfg, err = o.writePlainSet(work)
	}
	if err != nil {
		return err
	}
	set, err := render.Load(work)
	if err != nil {
		return fmt.Errorf("the set does not load (fix the chart or the flags, then run loom init again): %w", err)
	}
	results, err := offline.Run(set, true)
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.Err != nil {
			return fmt.Errorf("golden case %s: %w", r.Case, r.Err)
		}
	}
	// An empty DIR is replaced; rename does not replace a folder elsewhere.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(work, dir); err != nil {
		return fmt.Errorf("move the set into place: %w", err)
	}
	if o.chart != "" {
		fmt.Fprintf(out, "Made the set %s: %s names %s and the chart %s.\n", dir, config.File, o.kind, cfg.Chart)
	} else {
		fmt.Fprintf(out, "Made the set %s: %s names %s, configmap.yaml renders its children.\n", dir, config.File, o.kind)
	}
	if len(cfg.ClusterScoped) > 0 {
		fmt.Fprintf(out, "It declares the cluster-scoped kinds the chart renders: whoever may create a %s may make Loom create these.\n", o.kind)
	}
	fmt.Fprintf(out, "Next: loom crd -t %s | kubectl apply -f - ; loom test %s ; loom run --templates %s\n", dir, dir, dir)
	return nil
}

// checkInitDir refuses a dir that holds anything: init never mixes its
// files with others, so that it can put the set in place in one rename.
func checkInitDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == config.File }):
		return fmt.Errorf("%s already holds a %s", dir, config.File)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: loom init makes a new folder (give a path that does not exist)", dir)
	}
	return nil
}

// writeChartSet copies the chart into dir and writes loom.yaml and the
// test case's parent.
func (o *initOptions) writeChartSet(dir string) (config.Config, error) {
	name, err := copyChart(o.chart, dir)
	if err != nil {
		return config.Config{}, err
	}
	c, _, err := chart.Load(os.DirFS(dir), name, chart.Options{})
	if err != nil {
		return config.Config{}, err
	}
	cfg := config.Config{Parent: config.ParentRef{APIVersion: o.apiVersion, Kind: o.kind}, Chart: name}
	if cfg.ClusterScoped, err = clusterKinds(c); err != nil {
		return cfg, fmt.Errorf("render the chart with its defaults: %w", err)
	}
	looks, err := c.Lookups()
	if err != nil {
		return cfg, err
	}
	for _, l := range looks {
		cfg.Lookups = append(cfg.Lookups, config.LookupRule{APIVersion: l.APIVersion, Kind: l.Kind})
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		return cfg, err
	}
	return cfg, writeSetFiles(dir, map[string]string{
		config.File: "# Made by loom init from " + o.chart + ".\n" + string(y),
		filepath.Join(render.TestsDir, "example.yaml"): o.exampleParent("spec: {}\n"),
	})
}

// writePlainSet writes a plain set of Loom templates into dir.
func (o *initOptions) writePlainSet(dir string) (config.Config, error) {
	cfg := config.Config{Parent: config.ParentRef{APIVersion: o.apiVersion, Kind: o.kind}}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	loomYAML := fmt.Sprintf(`# Made by loom init. Every *.yaml file beside this one renders children of
# each %[2]s; files starting with "_" hold shared defines.
parent:
  apiVersion: %[1]s
  kind: %[2]s
# The parent's API: loom crd -t . prints the CRD made from it.
schema:
  spec:
    message: string | default="Hello" maxLength=1024 description="What the ConfigMap says."
`, o.apiVersion, o.kind)
	const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}
data:
  message: {{ .Spec.message | quote }}
`
	return cfg, writeSetFiles(dir, map[string]string{
		config.File:      loomYAML,
		"configmap.yaml": configMap,
		filepath.Join(render.TestsDir, "example.yaml"): o.exampleParent("spec:\n  message: Hello from loom init\n"),
	})
}

// exampleParent is the golden case's parent, with spec.
func (o *initOptions) exampleParent(spec string) string {
	return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: example\n  namespace: default\n%s", o.apiVersion, o.kind, spec)
}

// writeSetFiles writes files (by path inside dir) into dir.
func writeSetFiles(dir string, files map[string]string) error {
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyChart copies the chart into dir, and returns its path there.
func copyChart(from, dir string) (string, error) {
	fi, err := os.Stat(from)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if !fi.IsDir() {
		name := filepath.Base(from)
		b, err := os.ReadFile(from)
		if err != nil {
			return "", err
		}
		return name, os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err := os.CopyFS(filepath.Join(dir, "chart"), os.DirFS(from)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s already holds a chart folder", dir)
		}
		return "", err
	}
	return "chart", nil
}

// clusterKinds renders the chart with its defaults and lists the
// cluster-scoped kinds built into Kubernetes that it renders.
func clusterKinds(c *chart.Chart) ([]config.KindRef, error) {
	res, err := c.Render(map[string]any{}, chart.Env{
		Release: chart.Release{Name: "example", Namespace: "default", Revision: 1, IsInstall: true},
		Seed:    []byte("loom init"),
	})
	if err != nil {
		return nil, err
	}
	var out []config.KindRef
	for _, f := range res.Files {
		if chart.NotesFile(f.Name) {
			continue
		}
		for doc := range strings.SplitSeq(f.Text, "\n---") {
			var head struct{ APIVersion, Kind string }
			if yaml.Unmarshal([]byte(doc), &head) != nil || head.Kind == "" {
				continue
			}
			ref := config.KindRef{APIVersion: head.APIVersion, Kind: head.Kind}
			if render.IsClusterScoped(head.APIVersion, head.Kind) && !slices.Contains(out, ref) {
				out = append(out, ref)
			}
		}
	}
	return out, nil
}
