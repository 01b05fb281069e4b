package transport

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/shard"
)

// owner owns the parents of the buckets in held.
type owner struct{ held shard.Set }

func (o owner) Owns(uid types.UID) bool { return shard.Matches(o.held, uid) }

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// uidOutside returns a parent UID whose bucket is not in s.
func uidOutside(t *testing.T, s shard.Set) types.UID {
	t.Helper()
	for i := range 10000 {
		if uid := types.UID(fmt.Sprintf("parent-%d", i)); !shard.Matches(s, uid) {
			return uid
		}
	}
	t.Fatalf("no UID outside %s", s)
	return ""
}

func TestShardGuard(t *testing.T) {
	const owned = types.UID("owned-parent")
	foreign := uidOutside(t, shard.Set(0).Add(shard.Bucket(owned)))
	tests := []struct {
		name   string
		method string
		uid    types.UID // "" when the request is not for a parent
		want   bool      // whether it reaches the next round tripper
	}{
		{"GET for a parent not owned: reads always pass", http.MethodGet, foreign, true},
		{"HEAD for a parent not owned", http.MethodHead, foreign, true},
		{"PATCH for an owned parent", http.MethodPatch, owned, true},
		{"POST for an owned parent", http.MethodPost, owned, true},
		{"PUT for an owned parent", http.MethodPut, owned, true},
		{"DELETE for an owned parent", http.MethodDelete, owned, true},
		{"PATCH for a parent not owned", http.MethodPatch, foreign, false},
		{"POST for a parent not owned", http.MethodPost, foreign, false},
		{"PUT for a parent not owned", http.MethodPut, foreign, false},
		{"DELETE for a parent not owned", http.MethodDelete, foreign, false},
		{"PATCH for no parent (e.g. the TemplateSet of an unsharded path)", http.MethodPatch, "", true},
		{"DELETE for no parent", http.MethodDelete, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent := 0
			g := &ShardGuard{
				Owner: owner{held: shard.Set(0).Add(shard.Bucket(owned))},
				Next: roundTripFunc(func(*http.Request) (*http.Response, error) {
					sent++
					return &http.Response{StatusCode: http.StatusOK}, nil
				}),
			}
			ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
			if tt.uid != "" {
				ctx = WithParentUID(ctx, tt.uid)
			}
			req, err := http.NewRequestWithContext(ctx, tt.method, "https://api.example/apis/apps/v1/namespaces/ns/deployments/web", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := g.RoundTrip(req)
			if tt.want {
				if err != nil || resp == nil || sent != 1 {
					t.Fatalf("RoundTrip = %v, %v with %d requests sent; want the request sent once", resp, err, sent)
				}
				return
			}
			if !errors.Is(err, ErrNotOwner) {
				t.Errorf("RoundTrip error = %v, want one that wraps ErrNotOwner", err)
			}
			if resp != nil || sent != 0 {
				t.Errorf("RoundTrip = %v with %d requests sent; want none sent", resp, sent)
			}
		})
	}
}
