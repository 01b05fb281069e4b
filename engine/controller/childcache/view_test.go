package childcache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The status template sees each child as rendered, with the live
// metadata and status, whether the cache holds it slimmed or an apply
// just returned it whole.
func TestChildView(t *testing.T) {
	rendered := u(t, `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns, labels: {app: web},
  annotations: {team: a}}, spec: {ports: [{port: 80}]}}`)
	want := u(t, `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns, uid: u1, labels: {app: web, x: y},
  annotations: {team: a}}, spec: {ports: [{port: 80}]}, status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}}`)
	tests := []struct{ name, live string }{
		{"slim", `{apiVersion: v1, kind: Service, loom.dev/fields: abc, metadata: {name: web, namespace: ns, uid: u1,
  labels: {app: web, x: y}, annotations: {loom.dev/applied: h}}, spec: {type: ClusterIP},
  status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}}`},
		{"whole", `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns, uid: u1, labels: {app: web, x: y},
  creationTimestamp: "2026-01-01T00:00:00Z", managedFields: [{manager: loom, operation: Apply, fieldsV1: {}}],
  annotations: {loom.dev/applied: h, team: a}}, spec: {clusterIP: 10.96.0.9, type: ClusterIP, ports: [{port: 80, protocol: TCP}]},
  status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := View(rendered, u(t, tt.live))
			if diff := cmp.Diff(want.Object, got.Object); diff != "" {
				t.Errorf("View (-want +got):\n%s", diff)
			}
		})
	}
	if _, ok := rendered.Object["status"]; ok {
		t.Error("View wrote into the rendered object")
	}
}
