package testutil

import (
	"context"
	"sync"
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

// Consistently checks cond every 100ms for d, and fails the test the
// first time it does not hold: for what must not happen, such as a second
// write or a repeated Event.
func Consistently(t testing.TB, d time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cond(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: broken: %v", what, err)
		}
		if !time.Now().Before(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Poll is Eventually with an interval of its own, for conditions that are
// costly to check (a list of hundreds of objects).
func Poll(t testing.TB, interval, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		if deadline, ok := ctx.Deadline(); ok && err != nil && last != nil && !time.Now().Before(deadline) {
			// The deadline cut this try short (a client's rate limiter
			// refuses to wait past it): the try before says why.
			return false, nil
		}
		last = err
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, last)
	}
}

// ForEach calls fn for 0 … n-1 from workers goroutines at once. The first
// error cancels the context the other calls get, and is returned once they
// have ended.
func ForEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return context.Cause(ctx)
}
