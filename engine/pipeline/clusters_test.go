package pipeline

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/render/placement"
)

// Plan renders with the registrations its caller gives: the set's
// allowed clusters fan out, and without a registration a child aimed at
// a cluster is refused.
func TestPlanClusters(t *testing.T) {
	const fanOut = `{{- range .Clusters }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Name }}
  annotations: {loom.dev/cluster: {{ .Name }}}
{{- end }}
`
	const aimed = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations: {loom.dev/cluster: w1}\n"
	regs := []cluster.Registration{{Name: "w3"}, {Name: "w2"}, {Name: "w1"}}
	tests := []struct {
		name     string
		template string
		regs     []cluster.Registration
		want     []string // cluster/name of the children applied now
		wantIs   error
	}{
		{name: "a fan-out", template: fanOut, regs: regs, want: []string{"w1/web", "w2/web"}},
		{name: "a fan-out with nothing registered", template: fanOut},
		{name: "aimed at a registered cluster", template: aimed, regs: regs, want: []string{"w1/web"}},
		{name: "aimed with nothing registered", template: aimed, wantIs: placement.ErrNotRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := render.LoadFS(fstest.MapFS{
				config.File: {Data: []byte(loomYAML + "clusters: {names: [w1, w2]}\n")},
				"a.yaml":    {Data: []byte(tt.template)},
			}, "app")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Plan(context.Background(), set, parent(t), nil, Options{Clusters: tt.regs})
			if tt.wantIs != nil {
				if !errors.Is(err, tt.wantIs) {
					t.Fatalf("Plan() = %v, want errors.Is %v", err, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Plan.Apply {
				got = append(got, object.TargetCluster(c)+"/"+c.GetName())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
		})
	}
}
