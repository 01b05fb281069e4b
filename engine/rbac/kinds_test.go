package rbac

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResource(t *testing.T) {
	for gk, want := range map[schema.GroupKind]string{
		{Kind: "ConfigMap"}:                                   "configmaps",
		{Kind: "Endpoints"}:                                   "endpoints",
		{Group: "networking.k8s.io", Kind: "Ingress"}:         "ingresses",
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:   "networkpolicies",
		{Group: "gateway.networking.k8s.io", Kind: "Gateway"}: "gateways",
	} {
		if got := Resource(gk).Resource; got != want {
			t.Errorf("Resource(%v) = %q, want %q", gk, got, want)
		}
	}
}
