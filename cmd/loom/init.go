package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/golden"
)

func newInitCommand() *cobra.Command {
	var chartPath, kind, apiVersion string
	cmd := &cobra.Command{
		Use:   "init DIR --chart PATH --kind KIND",
		Short: "Make a template set from a Helm chart: loom.yaml, the chart, and a golden test case",
		Long: `Init makes a template set in DIR (which must not hold a loom.yaml) from a
Helm chart, a folder or a .tgz: it copies the chart into DIR, writes a
loom.yaml that names the parent kind and the chart, declares the
cluster-scoped kinds the chart renders with its default values
(clusterScoped) and the kinds its templates look up (lookups), and writes
a golden test case, tests/example.yaml (a parent with an empty spec: the
chart's defaults) with its tests/example.golden.yaml. Review loom.yaml:
what it declares is what a user who may create a parent may make Loom do.

Then: 'loom crd -t DIR' prints the parent's CRD (its spec's schema
inferred from values.yaml), 'loom test DIR' checks the golden case, and
'loom run --templates DIR' runs it.

` + exitStatusPlain,
		Example: `  loom init sets/podinfo --chart ./podinfo --kind Podinfo --api-version apps.example.com/v1
  loom init sets/shop --chart shop-1.2.3.tgz --kind Shop`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if _, err := os.Stat(filepath.Join(dir, config.File)); err == nil {
				return fmt.Errorf("%s already holds a %s", dir, config.File)
			}
			name, err := copyChart(chartPath, dir)
			if err != nil {
				return err
			}
			c, _, err := chart.Load(os.DirFS(dir), name, chart.Options{})
			if err != nil {
				return err
			}
			cfg := config.Config{Parent: config.ParentRef{APIVersion: apiVersion, Kind: kind}, Chart: name}
			if cfg.ClusterScoped, err = clusterKinds(c); err != nil {
				return fmt.Errorf("render the chart with its defaults: %w", err)
			}
			looks, err := c.Lookups()
			if err != nil {
				return err
			}
			for _, l := range looks {
				cfg.Lookups = append(cfg.Lookups, config.LookupRule{APIVersion: l.APIVersion, Kind: l.Kind})
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			y, err := yaml.Marshal(cfg)
			if err != nil {
				return err
			}
			parent := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: example\n  namespace: default\nspec: {}\n", apiVersion, kind)
			if err := os.MkdirAll(filepath.Join(dir, render.TestsDir), 0o755); err != nil {
				return err
			}
			for path, text := range map[string]string{
				filepath.Join(dir, config.File):                     "# Made by loom init from " + chartPath + ".\n" + string(y),
				filepath.Join(dir, render.TestsDir, "example.yaml"): parent,
			} {
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					return err
				}
			}
			set, err := render.Load(dir)
			if err != nil {
				return fmt.Errorf("the set does not load (fix the chart or loom.yaml, then run loom test --update %s): %w", dir, err)
			}
			results, err := golden.Run(set, true)
			if err != nil {
				return err
			}
			for _, r := range results {
				if r.Err != nil {
					return fmt.Errorf("golden case %s: %w", r.Case, r.Err)
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Made the set %s: %s names %s and the chart %s.\n", dir, config.File, kind, name)
			if len(cfg.ClusterScoped) > 0 {
				fmt.Fprintf(out, "It declares the cluster-scoped kinds the chart renders: whoever may create a %s may make Loom create these.\n", kind)
			}
			fmt.Fprintf(out, "Next: loom crd -t %s | kubectl apply -f - ; loom test %s ; loom run --templates %s\n", dir, dir, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&chartPath, "chart", "", "the Helm chart: a folder or a .tgz")
	cmd.Flags().StringVar(&kind, "kind", "", "the parent's kind, e.g. Podinfo")
	cmd.Flags().StringVar(&apiVersion, "api-version", "charts.loom.dev/v1alpha1", "the parent's group/version")
	_ = cmd.MarkFlagRequired("chart")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
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
