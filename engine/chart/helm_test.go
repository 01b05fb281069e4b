package chart

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// helmRender renders a chart as Helm 4's SDK does for `helm template`:
// loader, ProcessDependencies, ToRenderValuesWithSchemaValidation and
// engine.Render. NOTES.txt files are kept; partials are not in the map.
func helmRender(t testing.TB, dir string, values map[string]any, rel Release) (map[string]string, error) {
	t.Helper()
	return helmRenderCaps(t, dir, values, rel, common.DefaultCapabilities)
}

// helmRenderCaps is helmRender with capabilities.
func helmRenderCaps(t testing.TB, dir string, values map[string]any, rel Release, caps *common.Capabilities) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return nil, err
	}
	opts := common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Revision, IsInstall: rel.IsInstall, IsUpgrade: !rel.IsInstall}
	top, err := cutil.ToRenderValuesWithSchemaValidation(ch, values, opts, caps, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasPrefix(filepath.Base(name), "_") {
			delete(files, name)
		}
	}
	return files, nil
}

// loomRender renders the same chart with this package.
func loomRender(t testing.TB, dir string, values map[string]any, rel Release) (map[string]string, error) {
	t.Helper()
	c, _, err := Load(os.DirFS(filepath.Dir(dir)), filepath.Base(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Render(values, Env{Release: rel})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range res.Files {
		out[f.Name] = f.Text
	}
	return out, nil
}

// TestRenderAgainAgreesWithHelm renders each value set twice on one
// loaded chart, in turn, so that the second render of each comes from
// what the first prepared: nothing a render changes (a template's set on
// .Values, say) may reach the next.
func TestRenderAgainAgreesWithHelm(t *testing.T) {
	web := filepath.Join("testdata", "charts", "web")
	c, _, err := Load(os.DirFS(filepath.Dir(web)), filepath.Base(web), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rel := Release{Name: "shop", Namespace: "team-a", Revision: 1, IsInstall: true}
	for round := range 2 {
		for seed := range uint64(30) {
			values := genValues(seed)
			want, werr := helmRender(t, web, readValues(t, values), rel)
			res, gerr := c.Render(readValues(t, values), Env{Release: rel})
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("round %d, seed %d:\nhelm: %v\nloom: %v", round, seed, werr, gerr)
			}
			if werr != nil {
				continue
			}
			got := map[string]string{}
			for _, f := range res.Files {
				got[f.Name] = f.Text
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d, seed %d (-helm +loom):\n%s", round, seed, diff)
			}
		}
	}
}

// readValues parses values as Helm reads a values file (numbers are
// float64).
func readValues(t testing.TB, y string) map[string]any {
	t.Helper()
	v, err := common.ReadValues([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

func TestRenderAgreesWithHelm(t *testing.T) {
	web := filepath.Join("testdata", "charts", "web")
	rel := Release{Name: "shop", Namespace: "team-a", Revision: 1, IsInstall: true}
	tests := []struct {
		name   string
		dir    string
		values string
		rel    Release
	}{
		{name: "defaults", dir: web, rel: rel},
		{name: "upgrade revision", dir: web, rel: Release{Name: "shop", Namespace: "team-a", Revision: 7}},
		{name: "release name contains the chart name", dir: web, rel: Release{Name: "my-web", Namespace: "x", Revision: 1, IsInstall: true}},
		{name: "overrides", dir: web, rel: rel, values: `
replicaCount: 5
image: {repository: other/web, tag: "1.0", pullPolicy: Always}
service: {type: NodePort, port: 8080, annotations: {a: "1", b: two}}
bigNumber: 123456789
ratio: 1.5e-7
podLabels: {tier: back, extra: "yes"}
resources: {limits: {cpu: 100m, memory: 64Mi}}
ingress: {enabled: true}
fullnameOverride: custom-name-that-is-quite-long-and-goes-on-and-on-past-sixty-three-characters
`},
		{name: "conditions off", dir: web, rel: rel, values: `
db: {enabled: false}
redis: {enabled: false}
hooks: {migrate: false}
`},
		{name: "condition list falls through to global", dir: web, rel: rel, values: `
db: {enabled: "not a bool"}
global: {dbEnabled: false}
`},
		{name: "tags", dir: web, rel: rel, values: `
tags: {backend: false, extras: true}
memcache: {size: huge}
`},
		{name: "nested subchart off and globals", dir: web, rel: rel, values: `
db: {backup: {enabled: false}, port: 6543}
global: {region: ap-south, extra: [1, 2]}
`},
		{name: "null removes a default", dir: web, rel: rel, values: `
podLabels: null
service: {annotations: null}
`},
		{name: "tpl defines", dir: web, rel: rel, values: `
config: {greeting: '{{ define "x" }}X{{ .Release.Name }}{{ end }}{{ include "x" . }}-{{ include "web.name" . }}'}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, werr := helmRender(t, tt.dir, readValues(t, tt.values), tt.rel)
			got, gerr := loomRender(t, tt.dir, readValues(t, tt.values), tt.rel)
			if werr != nil || gerr != nil {
				t.Fatalf("helm: %v\nloom: %v", werr, gerr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("output differs from Helm's (-helm +loom):\n%s", diff)
			}
		})
	}
}

func TestRenderFailsAsHelmDoes(t *testing.T) {
	web := filepath.Join("testdata", "charts", "web")
	rel := Release{Name: "shop", Namespace: "team-a", Revision: 1, IsInstall: true}
	tests := []struct {
		name   string
		values string
		// where is the file:line Loom's error must name ("" for values).
		where string
	}{
		{name: "schema: type", values: `replicaCount: many`},
		{name: "schema: minimum", values: `replicaCount: -1`},
		{name: "schema: enum and required", values: `image: {repository: "", pullPolicy: Sometimes}`},
		{name: "schema: nested port", values: `service: {port: 70000}`},
		{name: "fail", values: `mustFail: stop here`, where: "web/templates/service.yaml:2"},
		{name: "required", values: `needName: {other: 1}`, where: "web/templates/service.yaml:3"},
		{name: "required empty string", values: `needName: {name: ""}`, where: "web/templates/service.yaml:3"},
		{name: "tpl parse error", values: `config: {greeting: "{{ .Release.Name"}`, where: "web/templates/deployment.yaml:"},
		{name: "include of a missing define", values: `config: {greeting: '{{ include "nope" . }}'}`, where: "web/templates/deployment.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, werr := helmRender(t, web, readValues(t, tt.values), rel)
			_, gerr := loomRender(t, web, readValues(t, tt.values), rel)
			if werr == nil || gerr == nil {
				t.Fatalf("both must fail\nhelm: %v\nloom: %v", werr, gerr)
			}
			if tt.where == "" {
				// The values' failures are Helm's own functions' errors.
				// Helm lists a chart's schema failures in no fixed order.
				if sortedLines(werr.Error()) != sortedLines(gerr.Error()) {
					t.Errorf("errors differ\nhelm: %v\nloom: %v", werr, gerr)
				}
				return
			}
			if !strings.Contains(gerr.Error(), tt.where) {
				t.Errorf("loom's error does not name %s: %v", tt.where, gerr)
			}
			// Helm's message (after its location) is in Loom's.
			msg := werr.Error()
			if i := strings.LastIndex(msg, "): "); i >= 0 {
				msg = msg[i+3:]
			}
			msg = strings.TrimSpace(msg[strings.LastIndex(msg, "\n")+1:])
			if !strings.Contains(gerr.Error(), msg) {
				t.Errorf("loom's error lacks Helm's message %q\nhelm: %v\nloom: %v", msg, werr, gerr)
			}
		})
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestAppChartAgreesWithHelm renders the typical chart (a library of
// helpers, optional parts) with its defaults and with every part on.
func TestAppChartAgreesWithHelm(t *testing.T) {
	app := filepath.Join("testdata", "charts", "app")
	rel := Release{Name: "store", Namespace: "prod", Revision: 3}
	c, _, err := Load(os.DirFS(filepath.Dir(app)), filepath.Base(app), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each value set twice: the second render of the first two is the
	// kept output of the first (the chart makes no lookup).
	cases := []string{
		``,
		`{commonLabels: {team: pay}, commonAnnotations: {note: "{{ .Release.Name }}"}, podLabels: {tier: api},
		  autoscaling: {enabled: true}, ingress: {enabled: true, tls: true}, metrics: {enabled: true, serviceMonitor: {enabled: true}},
		  persistence: {enabled: true}, global: {storageClass: fast, imageRegistry: reg.example}, image: {digest: "sha256:abc"},
		  networkPolicy: {allowExternal: false}, podAntiAffinityPreset: hard, resourcesPreset: large, auth: {existingSecret: {name: given, keyMapping: {password: pw}}},
		  tolerations: [{key: k, operator: Exists}], extraEnvVars: [{name: X, value: "{{ .Chart.Name }}"}],
		  extraDeploy: [{apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ .Release.Name }}-extra"}, data: {a: b}}],
		  rbac: {rules: [{apiGroups: [apps], resources: [deployments], verbs: [get]}]}}`,
		`{resourcesPreset: huge}`,
		`{image: {repository: ""}}`,
	}
	for i := range 2 * len(cases) {
		values := cases[i%len(cases)]
		i %= len(cases)
		want, werr := helmRender(t, app, readValues(t, values), rel)
		var got map[string]string
		res, gerr := c.Render(readValues(t, values), Env{Release: rel})
		if gerr == nil {
			got = map[string]string{}
			for _, f := range res.Files {
				got[f.Name] = f.Text
			}
		}
		if (werr == nil) != (gerr == nil) || (werr == nil) != (i < 2) {
			t.Fatalf("values %s (the first two render, the others fail)\nhelm: %v\nloom: %v", values, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if len(got) < 10 {
			t.Errorf("values %s: rendered only %d files", values, len(got))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("values %s: output differs from Helm's (-helm +loom):\n%s", values, diff)
		}
	}
}

// With capabilities of its own (a cluster's, or helm template's
// --kube-version and --api-versions), a chart renders as under Helm with
// the same: .Capabilities.APIVersions.Has and the version both follow.
func TestCapabilitiesAgreeWithHelm(t *testing.T) {
	web := filepath.Join("testdata", "charts", "web")
	caps, err := CapabilitiesWith("v1.29.3", []string{"monitoring.coreos.com/v1"})
	if err != nil {
		t.Fatal(err)
	}
	rel := Release{Name: "shop", Namespace: "team-a", Revision: 1, IsInstall: true}
	want, err := helmRenderCaps(t, web, nil, rel, caps)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(os.DirFS(filepath.Dir(web)), filepath.Base(web), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Render(map[string]any{}, Env{Release: rel, Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range res.Files {
		got[f.Name] = f.Text
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-helm +loom):\n%s", diff)
	}
	d := got["web/templates/deployment.yaml"]
	if !strings.Contains(d, `hasMonitoring: "true"`) || !strings.Contains(d, `kube: "1.29"`) {
		t.Errorf("the capabilities did not reach the templates:\n%s", d)
	}
	// The same chart and values with Helm's defaults: another output, not
	// the one kept for the other capabilities.
	res, err = c.Render(map[string]any{}, Env{Release: rel})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Name == "web/templates/deployment.yaml" && strings.Contains(f.Text, `hasMonitoring: "true"`) {
			t.Error("a render with Helm's defaults got the output of the other capabilities")
		}
	}
	// The app chart makes no lookup, so its output is kept: a render with
	// other capabilities must not get it.
	app := filepath.Join("testdata", "charts", "app")
	ac, _, err := Load(os.DirFS(filepath.Dir(app)), filepath.Base(app), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// (Under go test, Helm's default Kubernetes version is 1.20.)
	newer, err := CapabilitiesWith("v1.30.5", nil)
	if err != nil {
		t.Fatal(err)
	}
	pdb := func(caps *Capabilities) string {
		res, err := ac.Render(map[string]any{}, Env{Release: rel, Capabilities: caps})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Files {
			if f.Name == "app/templates/pdb.yaml" {
				return strings.SplitN(f.Text, "\n", 3)[1]
			}
		}
		return ""
	}
	for range 2 {
		if got := pdb(nil); got != "apiVersion: policy/v1beta1" {
			t.Errorf("Helm's defaults (Kubernetes 1.20): %q", got)
		}
		if got := pdb(newer); got != "apiVersion: policy/v1" {
			t.Errorf("Kubernetes 1.30: %q", got)
		}
	}
}
