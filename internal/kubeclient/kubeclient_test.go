package kubeclient

import (
	"testing"

	"k8s.io/client-go/rest"
)

// limiterOf is the rate limiter of a typed client's RESTClient.
func limiterOf(t *testing.T, c rest.Interface) any {
	t.Helper()
	rc, ok := c.(*rest.RESTClient)
	if !ok {
		t.Fatalf("RESTClient is a %T, not a *rest.RESTClient", c)
	}
	return rc.GetRateLimiter()
}

// TestNewForConfigAsTheClientset checks what kubernetes.NewForConfig does
// for its clients: one rate limiter shared by every group when the config
// has a QPS, none when it has none, an error for a QPS without a burst,
// one HTTP client, and the caller's config left as it was.
func TestNewForConfigAsTheClientset(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         rest.Config
		wantLimiter bool
		wantErr     bool
	}{
		{name: "qps shares one limiter", cfg: rest.Config{Host: "https://h", QPS: 5, Burst: 10}, wantLimiter: true},
		{name: "no qps, no limiter", cfg: rest.Config{Host: "https://h", QPS: -1}},
		{name: "qps without burst", cfg: rest.Config{Host: "https://h", QPS: 5}, wantErr: true},
		{name: "user agent set", cfg: rest.Config{Host: "https://h", QPS: -1, UserAgent: "loom/test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cfg
			cs, err := NewForConfig(&tc.cfg)
			if tc.cfg.RateLimiter != before.RateLimiter || tc.cfg.UserAgent != before.UserAgent {
				t.Errorf("NewForConfig changed the caller's config")
			}
			if tc.wantErr {
				if err == nil {
					t.Fatal("NewForConfig succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			core := limiterOf(t, cs.CoreV1().RESTClient())
			authz := limiterOf(t, cs.AuthorizationV1().RESTClient())
			coord := limiterOf(t, cs.CoordinationV1().RESTClient())
			if tc.wantLimiter && (core == nil || core != authz || core != coord) {
				t.Errorf("rate limiters core %p, authorization %p, coordination %p: want one, shared", core, authz, coord)
			}
			if !tc.wantLimiter && (core != nil || authz != nil || coord != nil) {
				t.Errorf("rate limiters core %v, authorization %v, coordination %v: want none", core, authz, coord)
			}
			if got := cs.core.RESTClient().(*rest.RESTClient).Client; got != cs.coordination.RESTClient().(*rest.RESTClient).Client {
				t.Errorf("the clients do not share one HTTP client")
			}
		})
	}
}
