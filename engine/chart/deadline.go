package chart

import (
	"context"
	"errors"
	"strings"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// A render stops when its context ends (RenderContext), as a set's of
// Loom templates does (package deadline): every tree is guarded when it
// is parsed (a shape's, once, before it is cloned; tpl's text right
// after it is parsed), and every writer the templates execute into (the
// file's countWriter, include's and tpl's builders) checks the context on
// each empty write, which is a guard's check.

// StoppedError is a render that its context stopped before it finished.
// Err is the context's error (context.DeadlineExceeded,
// context.Canceled) and Cause its cause (context.Cause), which may say
// more. It is the Err of an *Error at the file and line of the loop that
// was running, or at the tpl call whose text was.
type StoppedError struct {
	Err, Cause error
}

func (e *StoppedError) Error() string {
	return "the render did not finish in time (a loop that never ends?): " + e.Cause.Error()
}

// Unwrap returns the context's error and its cause.
func (e *StoppedError) Unwrap() []error { return []error{e.Err, e.Cause} }

// stopped is a *StoppedError if ctx has ended, and nil otherwise.
func stopped(ctx context.Context) error {
	if ctx == nil || ctx.Err() == nil {
		return nil
	}
	return &StoppedError{Err: ctx.Err(), Cause: context.Cause(ctx)}
}

// check is called by the render's writers on an empty write, which a
// check is: it fails once the render's context has ended, and keeps the
// first failed check (site) for the error's location.
func (r *renderer) check(site []byte) error {
	if r.done == nil {
		return nil
	}
	select {
	case <-r.done:
		top := r.top()
		if top.site == nil {
			top.site = site
		}
		return stopped(r.ctx)
	default:
		return nil
	}
}

// locate places a render that failed in file: at the loop whose check
// failed, when the render was stopped in one of the chart's templates;
// otherwise (another error, or a check in tpl text, which is in no
// file), where text/template's error says.
func (r *renderer) locate(file string, err error) *Error {
	if r.site != nil {
		if at, line, ok := deadline.Site(r.t, r.site); ok && !strings.HasPrefix(at, TplName) {
			if se := (*StoppedError)(nil); errors.As(err, &se) {
				return &Error{File: at, Line: line, Err: se}
			}
		}
	}
	return &Error{File: file, Err: err}
}

// checkedBuilder is the strings.Builder that include and tpl execute
// into, checking the render's context on each empty write.
type checkedBuilder struct {
	strings.Builder
	r *renderer
}

func (b *checkedBuilder) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, b.r.check(p) // a check (package deadline)
	}
	return b.Builder.Write(p)
}
