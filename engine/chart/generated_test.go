package chart

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// genValues makes values for the web test chart from a seed: every knob
// the chart reads, including the ones that enable subcharts, with values
// of the wrong type now and then (which the schema or Helm's condition
// handling must meet the same way in both engines).
func genValues(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	v := map[string]any{}
	maybe := func(p float64) bool { return r.Float64() < p }
	pick := func(xs ...any) any { return xs[r.IntN(len(xs))] }
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789-"
		n := 1 + r.IntN(40)
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[r.IntN(len(letters)-1)] // no dash: names stay valid
		}
		return string(b)
	}
	if maybe(0.7) {
		v["replicaCount"] = pick(0, 1, 3, 50, 2, 4, 6, 12, 51, -2, 2.5, "3", nil)
	}
	if maybe(0.5) {
		img := map[string]any{"repository": pick("r/web", "quay.io/x/y", "a/b", "c", "", 7)}
		if maybe(0.5) {
			img["tag"] = pick("1.0", "", "v2.3.4-rc.1", "latest", 3)
		}
		if maybe(0.5) {
			img["pullPolicy"] = pick("Always", "Never", "IfNotPresent", "Always", "Sometimes")
		}
		v["image"] = img
	}
	if maybe(0.5) {
		v["service"] = map[string]any{
			"type":        pick("ClusterIP", "NodePort", "LoadBalancer", "ClusterIP", "NodePort", "Weird"),
			"port":        pick(80, 443, 65535, 8080, 9090, 1, 0, 70000),
			"annotations": pick(nil, map[string]any{}, map[string]any{"x": word(), "n": r.IntN(1e6)}),
		}
	}
	if maybe(0.6) {
		v["bigNumber"] = pick(r.IntN(10), r.IntN(1e7), 1e12+float64(r.IntN(1000)), r.Float64()*1e21, -r.IntN(1e9))
	}
	if maybe(0.5) {
		v["ratio"] = pick(r.Float64(), r.Float64()*1e-9, float64(r.IntN(100)), 1.0/3)
	}
	if maybe(0.4) {
		v["timeout"] = pick(r.IntN(10000), "90s", "1h2m", "2.5", "bad", nil)
	}
	if maybe(0.4) {
		labels := map[string]any{}
		for i := range r.IntN(4) {
			labels[fmt.Sprintf("k%d", i)] = pick(word(), r.IntN(100), true)
		}
		v["podLabels"] = pick(labels, nil)
	}
	if maybe(0.4) {
		var env []any
		for i := range r.IntN(4) {
			env = append(env, map[string]any{"name": fmt.Sprintf("E%d", i), "value": pick(word(), r.IntN(1e8), 1.5, false)})
		}
		v["extraEnv"] = env
	}
	if maybe(0.4) {
		v["config"] = map[string]any{"greeting": pick("hi", "{{ .Release.Name }}-{{ .Values.replicaCount }}",
			`{{ define "g" }}G{{ .Chart.Name }}{{ end }}{{ include "g" . }}`, "{{ .Values.missing }}x", `{{ include "web.fullname" . }}`)}
	}
	if maybe(0.5) {
		v["db"] = map[string]any{"enabled": pick(true, false, "yes", nil), "port": pick(5432, 1, "p")}
		if maybe(0.5) {
			v["db"].(map[string]any)["backup"] = map[string]any{"enabled": pick(true, false), "schedule": pick("@hourly", "1 2 3 4 5")}
		}
	}
	if maybe(0.5) {
		v["global"] = map[string]any{"region": pick("a", "b", 3), "dbEnabled": pick(true, false, nil)}
	}
	if maybe(0.5) {
		v["tags"] = map[string]any{"backend": pick(true, false), "extras": pick(true, false)}
	}
	if maybe(0.4) {
		v["redis"] = map[string]any{"enabled": pick(true, false), "size": word()}
	}
	if maybe(0.3) {
		v["memcache"] = map[string]any{"size": pick(word(), 5, nil)}
	}
	if maybe(0.3) {
		v["hooks"] = map[string]any{"migrate": pick(true, false)}
	}
	if maybe(0.3) {
		var hosts []any
		for range r.IntN(3) {
			hosts = append(hosts, map[string]any{"host": word() + ".example", "paths": []any{"/" + word()}})
		}
		v["ingress"] = map[string]any{"enabled": pick(true, false), "hosts": hosts}
	}
	if maybe(0.3) {
		v["resources"] = pick(map[string]any{"limits": map[string]any{"cpu": "100m"}}, map[string]any{})
	}
	if maybe(0.2) {
		v["fullnameOverride"] = word() + word()
	}
	if maybe(0.2) {
		v["nameOverride"] = pick("web", word())
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkAgainstHelm renders values with Helm and with Loom and fails when
// one fails and the other does not, or their files differ.
func checkAgainstHelm(t *testing.T, values string) (rendered bool) {
	t.Helper()
	web := filepath.Join("testdata", "charts", "web")
	rel := Release{Name: "gen", Namespace: "ns", Revision: 2}
	want, werr := helmRender(t, web, readValues(t, values), rel)
	got, gerr := loomRender(t, web, readValues(t, values), rel)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("values:\n%s\nhelm: %v\nloom: %v", values, werr, gerr)
	}
	if werr != nil {
		return false
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("values:\n%s\noutput differs from Helm's (-helm +loom):\n%s", values, diff)
	}
	return true
}

// TestGeneratedValuesAgreeWithHelm renders the web chart with values
// generated from fixed seeds, with Helm's SDK and with Loom.
func TestGeneratedValuesAgreeWithHelm(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	failed, rendered := 0, 0
	for seed := range uint64(n) {
		values := genValues(seed)
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if checkAgainstHelm(t, values) {
				rendered++
			}
		})
		if !ok {
			if failed++; failed > 3 {
				t.Fatal("more than 3 seeds differ")
			}
		}
	}
	// Both engines refusing every value would prove nothing.
	t.Logf("%d of %d value sets rendered, the others were refused by both", rendered, n)
	if rendered < n/3 {
		t.Errorf("only %d of %d value sets rendered: the generator mostly makes values both engines refuse", rendered, n)
	}
}

// FuzzRenderAgreesWithHelm is the same comparison under the fuzzer:
// go test -fuzz FuzzRenderAgreesWithHelm ./engine/chart.
func FuzzRenderAgreesWithHelm(f *testing.F) {
	for _, s := range []uint64{0, 1, 2, 42} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		values := genValues(seed)
		if strings.Contains(values, "\x00") {
			t.Skip()
		}
		checkAgainstHelm(t, values)
	})
}
