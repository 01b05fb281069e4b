package render

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// A render stops at its context's deadline. text/template has no hook for
// cancellation, and a loop need not call a function or write a byte on
// each turn: `{{ range 1000000 }}{{ range 1000000 }}{{ end }}{{ end }}`
// ranges over plain integers, `{{ range $l }}{{ range $l }}{{ end }}{{ end }}`
// over a list built once, and a define that calls itself twice through
// `template` branches without bound (text/template caps its depth, not its
// width). Checking the context in until misses these; abandoning the
// render's goroutine would leave it spinning on a CPU for ever.
//
// So every template tree is given, when it is parsed, an empty text node
// (a check) at the top of its body and of each range body in it.
// text/template writes a text node's bytes to the render's writer, which
// is Loom's (limitWriter, limitedBuilder, include's and tpl's included):
// on every turn of every loop and every template call, the writer gets an
// empty write and checks the context, at the cost of a non-blocking
// receive (a function call would cost a reflect call per turn, some four
// times the cost of a turn). Between two checks a render does work bounded
// by the template's text (functions are capped in size, see
// MaxListItems), so it stops soon after the deadline. A check's bytes are
// its own memory, so the error names the loop that was running, as an
// overflow is located (locate.go).

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

// guardTemplates puts checks in every template of t (see guardTree),
// except those that skip names, whose trees are guarded already.
func guardTemplates(t *template.Template, skip *template.Template) {
	for _, tmpl := range t.Templates() {
		if tmpl.Tree == nil {
			continue
		}
		if skip != nil {
			if old := skip.Lookup(tmpl.Name()); old != nil && old.Tree == tmpl.Tree {
				continue
			}
		}
		guardTree(tmpl.Tree)
	}
}

// guardTree puts a check at the top of the tree's body and of each range
// body in it. Trees are shared by every clone of a template, so a tree is
// guarded once, before it is cloned or executed (at load, or in tpl right
// after its text is parsed), never while another render reads it.
func guardTree(tree *parse.Tree) {
	if tree.Root == nil {
		return
	}
	guardRanges(tree.Root)
	tree.Root.Nodes = append([]parse.Node{deadlineCheck(tree.Root.Pos)}, tree.Root.Nodes...)
}

// guardRanges puts a check at the top of every range body in list, at the
// range's position.
func guardRanges(list *parse.ListNode) {
	if list == nil {
		return
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.RangeNode:
			guardRanges(n.List)
			guardRanges(n.ElseList)
			if n.List != nil {
				n.List.Nodes = append([]parse.Node{deadlineCheck(n.Pos)}, n.List.Nodes...)
			}
		case *parse.IfNode:
			guardRanges(n.List)
			guardRanges(n.ElseList)
		case *parse.WithNode:
			guardRanges(n.List)
			guardRanges(n.ElseList)
		case *parse.ListNode:
			guardRanges(n)
		}
	}
}

// deadlineCheck is a check at pos: an empty text node whose bytes have a
// backing array of their own, by which checkSite finds it.
func deadlineCheck(pos parse.Pos) *parse.TextNode {
	return &parse.TextNode{NodeType: parse.NodeText, Pos: pos, Text: make([]byte, 0, 1)}
}

// checkSite finds the check whose bytes site is, in t's templates, and
// returns its file and line; ok is false when site is no check of t's
// (text that tpl parsed is not in t).
func checkSite(t *template.Template, site []byte) (file string, line int, ok bool) {
	if cap(site) == 0 {
		return "", 0, false
	}
	first := &site[:1][0]
	for _, tmpl := range t.Templates() {
		if tmpl.Tree == nil || tmpl.Tree.Root == nil {
			continue
		}
		if n := findCheck(tmpl.Tree.Root, first); n != nil {
			loc, _ := tmpl.Tree.ErrorContext(n)
			return tmpl.Tree.ParseName, locLine(loc), true
		}
	}
	return "", 0, false
}

// findCheck walks a parse tree for the check whose bytes start at first.
func findCheck(node parse.Node, first *byte) *parse.TextNode {
	switch n := node.(type) {
	case *parse.TextNode:
		if len(n.Text) == 0 && cap(n.Text) > 0 && &n.Text[:1][0] == first {
			return n
		}
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if found := findCheck(c, first); found != nil {
				return found
			}
		}
	case *parse.IfNode:
		return findCheckIn(&n.BranchNode, first)
	case *parse.RangeNode:
		return findCheckIn(&n.BranchNode, first)
	case *parse.WithNode:
		return findCheckIn(&n.BranchNode, first)
	}
	return nil
}

func findCheckIn(b *parse.BranchNode, first *byte) *parse.TextNode {
	if found := findCheck(b.List, first); found != nil {
		return found
	}
	return findCheck(b.ElseList, first)
}

// locLine is the line of an ErrorContext location, "file:line:col".
func locLine(loc string) int {
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 0
	}
	n, _ := strconv.Atoi(parts[len(parts)-2])
	return n
}

// locateDeadline locates a render that its context stopped: at the check
// that failed, or, for a check in text that tpl parsed, where
// text/template says the failing call was (the tpl call's line).
func locateDeadline(r *renderer, file string, err error, de *deadlineError) *Error {
	if at, line, ok := checkSite(r.t, de.site); ok {
		return &Error{File: at, Line: line, Err: de}
	}
	e := fromTemplateError(file, err)
	return &Error{File: e.File, Line: e.Line, Err: de}
}
