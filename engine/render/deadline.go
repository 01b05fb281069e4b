package render

import (
	"context"
	"errors"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// A render stops at its context's deadline: every template tree is
// guarded when it is parsed (package deadline), and the render's writers
// (limitWriter, limitedBuilder) check the context on each empty write,
// which is a guard's check, and name its line when it fails.

// ErrDeadline marks a render that its context stopped before it finished
// (the reconcile timeout, `loom render --timeout`). errors.Is also finds
// the context's own error (context.DeadlineExceeded, context.Canceled).
var ErrDeadline = errors.New("the render did not finish in time (a loop that never ends?)")

// deadlineError is a render stopped by its context: ErrDeadline, with the
// context's error and its cause (context.WithTimeoutCause), which may say
// more, such as which timeout it was.
type deadlineError struct {
	err, cause error
	site       []byte // the check that failed, for its location
}

func (e *deadlineError) Error() string {
	return ErrDeadline.Error() + ": " + e.cause.Error()
}

func (e *deadlineError) Is(target error) bool { return target == ErrDeadline }
func (e *deadlineError) Unwrap() []error      { return []error{e.err, e.cause} }

// stopped returns a *deadlineError if ctx has ended, and nil otherwise.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return &deadlineError{err: ctx.Err(), cause: context.Cause(ctx)}
}

// checkDeadline is called by the render's writers on an empty write,
// which a check is: it fails once the render's context has ended, naming
// the write (site) for the error's location.
func (r *renderer) checkDeadline(site []byte) error {
	if r.done == nil {
		return nil
	}
	select {
	case <-r.done:
		err := stopped(r.ctx)
		if de, ok := err.(*deadlineError); ok {
			de.site = site
		}
		return err
	default:
		return nil
	}
}

// locateDeadline locates a render that its context stopped: at the check
// that failed, or, for a check in text that tpl parsed, where
// text/template says the failing call was (the tpl call's line).
func locateDeadline(r *renderer, file string, err error, de *deadlineError) *Error {
	if at, line, ok := deadline.Site(r.t, de.site); ok {
		return &Error{File: at, Line: line, Err: de}
	}
	e := fromTemplateError(file, err)
	return &Error{File: e.File, Line: e.Line, Err: de}
}
