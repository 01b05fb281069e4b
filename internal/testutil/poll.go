package testutil

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Eventually polls cond every 100 ms until it returns nil, and fails the
// test with cond's last error if that does not happen within timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	Poll(t, 100*time.Millisecond, timeout, what, cond)
}

// Poll is Eventually with an interval of its own, for conditions that are
// costly to check (a list of hundreds of objects).
func Poll(t testing.TB, interval, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, last)
	}
}
