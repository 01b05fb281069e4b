// Package deadline lets a text/template render stop at a deadline.
//
// text/template has no hook for cancellation, and a loop need not call a
// function or write a byte on each turn: `{{ range 1000000 }}{{ range
// 1000000 }}{{ end }}{{ end }}` ranges over plain integers, `{{ range $l
// }}{{ range $l }}{{ end }}{{ end }}` over a list built once, and a define
// that calls itself twice through `template` branches without bound
// (text/template caps its depth, not its width). Checking a context in
// functions such as until misses these; abandoning the render's goroutine
// would leave it spinning on a CPU for ever.
//
// So Guard gives every template tree, once, when it is parsed, an empty
// text node (a check) at the top of its body and of each range body in it.
// text/template writes a text node's bytes to the writer the template is
// executed with: on every turn of every loop and every template call, that
// writer gets an empty write. A writer that checks its deadline on every
// empty write (a non-blocking receive) stops the render soon after the
// deadline: between two checks a render does work bounded by the
// template's text and by what its functions may build. A check's bytes are
// memory of its own, so Site finds which check the failed write was, for
// the error's file and line.
//
// A check as a function call would cost a reflect call on every turn,
// some four times the cost of a turn; an empty write costs nothing
// measurable.
//
// The package also holds the few parse-tree helpers that engine/render,
// its schema check and engine/chart share to locate a node: LocLine, Walk
// and LineAt (tree.go).
package deadline

import (
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// Guard puts checks in every template of t (see GuardTree),
// except those that skip names, whose trees are guarded already.
func Guard(t *template.Template, skip *template.Template) {
	for _, tmpl := range t.Templates() {
		if tmpl.Tree == nil {
			continue
		}
		if skip != nil {
			if old := skip.Lookup(tmpl.Name()); old != nil && old.Tree == tmpl.Tree {
				continue
			}
		}
		GuardTree(tmpl.Tree)
	}
}

// GuardTree puts a check at the top of the tree's body and of each range
// body in it. Trees are shared by every clone of a template, so a tree is
// guarded once, before it is cloned or executed (at load, or in tpl right
// after its text is parsed), never while another render reads it.
func GuardTree(tree *parse.Tree) {
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
// backing array of their own, by which Site finds it.
func deadlineCheck(pos parse.Pos) *parse.TextNode {
	return &parse.TextNode{NodeType: parse.NodeText, Pos: pos, Text: make([]byte, 0, 1)}
}

// Site finds the check whose bytes site is, in t's templates, and
// returns its file and line; ok is false when site is no check of t's
// (text that tpl parsed is not in t).
func Site(t *template.Template, site []byte) (file string, line int, ok bool) {
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
			return tmpl.Tree.ParseName, LocLine(loc), true
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

// LocLine is the line of a text/template ErrorContext location,
// "file:line:col" (0 when it has none).
func LocLine(loc string) int {
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 0
	}
	n, _ := strconv.Atoi(parts[len(parts)-2])
	return n
}
