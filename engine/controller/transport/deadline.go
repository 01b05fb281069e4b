package transport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ResponseDeadline gives up on a request whose response has not begun
// within D: the API server is not going to answer it. It bounds every
// request Loom sends, the informers' lists and watches included, which
// have no deadline of their own (a reflector whose request hangs waits
// forever, and its informer never syncs), without cutting a response once
// it has begun, as a watch's goes on for minutes. rest.Config.Timeout
// would cut them (client-go makes it the http.Client's timeout, which
// covers reading the whole body).
type ResponseDeadline struct {
	// Next sends the request.
	Next http.RoundTripper
	// D is how long the response may take to begin.
	D time.Duration
}

// RoundTrip sends r and returns its response once it begins, or an error
// naming the request once D has passed without one.
func (t *ResponseDeadline) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	timer := time.AfterFunc(t.D, func() { cancel(fmt.Errorf("no response within %s", t.D)) })
	resp, err := t.Next.RoundTrip(r.WithContext(ctx))
	if !timer.Stop() {
		// The deadline passed before the response began (or just as it
		// did: its body can no longer be read).
		if err == nil {
			_ = resp.Body.Close()
		}
		cancel(nil)
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, context.Cause(ctx))
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a response's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
