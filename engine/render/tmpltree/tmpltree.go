// Package tmpltree reads text/template's text and parse trees for the
// places a render error points at: the block a file opens and never
// closes (Unclosed), the first thing a partial prints outside its define
// blocks (StrayLine), and the write that took a render over its output
// limit (OverflowLine). It holds no render state and imports no other
// stage: engine/render turns what it finds into a render.Error at that
// file and line.
package tmpltree

import (
	"bytes"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// blockWords are the actions that open a block closed by {{ end }}.
var blockWords = map[string]bool{"if": true, "range": true, "with": true, "define": true, "block": true}

// Unclosed finds the block that a template's text opens and never
// closes, which text/template reports as "unexpected EOF" at the file's
// last line: the innermost open block when the text ends. It returns the
// block's keyword and 1-based line, or ok false when the actions balance
// (the EOF has another cause). Comments and quoted strings inside actions
// are skipped, so neither "{{ if" in a string nor "}}" in a comment counts.
func Unclosed(src []byte) (word string, line int, ok bool) {
	type open struct {
		word string
		line int
	}
	var stack []open
	for i := 0; i < len(src); {
		j := bytes.Index(src[i:], []byte("{{"))
		if j < 0 {
			break
		}
		start := i + j
		end, word := scanAction(src, start+2)
		switch {
		case blockWords[word]:
			stack = append(stack, open{word, deadline.LineAt(src, start)})
		case word == "end" && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
		if end < 0 {
			break
		}
		i = end
	}
	if len(stack) == 0 {
		return "", 0, false
	}
	top := stack[len(stack)-1]
	return top.word, top.line, true
}

// scanAction reads the action whose text starts at i (after "{{"): it
// returns the offset just past its "}}" (-1 when there is none) and its
// first word ("" for a comment).
func scanAction(src []byte, i int) (end int, word string) {
	if i < len(src) && src[i] == '-' {
		i++
	}
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	if bytes.HasPrefix(src[i:], []byte("/*")) {
		c := bytes.Index(src[i+2:], []byte("*/"))
		if c < 0 {
			return -1, ""
		}
		i += 2 + c + 2
		if k := bytes.Index(src[i:], []byte("}}")); k >= 0 {
			return i + k + 2, ""
		}
		return -1, ""
	}
	w := i
	for w < len(src) && (src[w] >= 'a' && src[w] <= 'z') {
		w++
	}
	word = string(src[i:w])
	for k := w; k < len(src); k++ {
		switch src[k] {
		case '"', '`', '\'':
			q := src[k]
			for k++; k < len(src) && src[k] != q; k++ {
				if src[k] == '\\' && q != '`' {
					k++
				}
			}
		case '}':
			if k+1 < len(src) && src[k+1] == '}' {
				return k + 2, word
			}
		}
	}
	return -1, word
}

// StrayLine is the line of the first thing a partial prints outside its
// define blocks: text that is not blank, or an action that prints a value
// (declares no variable). It returns 0 when there is none.
func StrayLine(tree *parse.Tree) int {
	if tree == nil || tree.Root == nil {
		return 0
	}
	for _, n := range tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			if trimmed := bytes.TrimLeft(n.Text, " \t\r\n"); len(trimmed) > 0 {
				return textLine(tree, n, len(n.Text)-len(trimmed))
			}
		case *parse.ActionNode:
			if n.Pipe != nil && len(n.Pipe.Decl) == 0 {
				return textLine(tree, n, 0)
			}
		case *parse.IfNode, *parse.RangeNode, *parse.WithNode, *parse.TemplateNode:
			return textLine(tree, n, 0)
		}
	}
	return 0
}

// textLine is the line of node n's start, plus the lines in its first
// skip bytes when it is a text node.
func textLine(tree *parse.Tree, n parse.Node, skip int) int {
	loc, _ := tree.ErrorContext(n)
	line := deadline.LocLine(loc)
	if t, ok := n.(*parse.TextNode); ok {
		line += strings.Count(string(t.Text[:skip]), "\n")
	}
	return line
}

// OverflowLine locates the write that took a render over MaxOutputBytes,
// given the last two writes: the line of the text node that was written,
// or, when the last write was a value an action printed, the line where
// the text node written before it ends, which is where that action is. It
// returns "" when neither write is a text node of t's templates.
func OverflowLine(t *template.Template, sources map[string][]byte, last, prev []byte) (file string, line int) {
	if f, pos, ok := textNodeAt(t, last); ok {
		// The line the text ends on: a loop's body, not the newline
		// before it.
		text := bytes.TrimRight(last, "\n")
		if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
			pos += i + 1
		}
		return f, deadline.LineAt(sources[f], pos)
	}
	if f, pos, ok := textNodeAt(t, prev); ok {
		return f, deadline.LineAt(sources[f], pos+len(prev))
	}
	return "", 0
}

// textNodeAt finds the text node whose bytes p is (the same memory, as
// text/template writes it) in t's templates, and returns the file it was
// parsed from and its byte offset there.
func textNodeAt(t *template.Template, p []byte) (file string, pos int, ok bool) {
	if len(p) == 0 {
		return "", 0, false
	}
	for _, tmpl := range t.Templates() {
		if tmpl.Tree == nil || tmpl.Tree.Root == nil {
			continue
		}
		if n := findText(tmpl.Tree.Root, &p[0]); n != nil {
			return tmpl.Tree.ParseName, int(n.Pos), true
		}
	}
	return "", 0, false
}

// findText walks a parse tree for the text node whose bytes start at first.
func findText(node parse.Node, first *byte) *parse.TextNode {
	switch n := node.(type) {
	case *parse.TextNode:
		if len(n.Text) > 0 && &n.Text[0] == first {
			return n
		}
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if found := findText(c, first); found != nil {
				return found
			}
		}
	case *parse.IfNode:
		return findInBranch(&n.BranchNode, first)
	case *parse.RangeNode:
		return findInBranch(&n.BranchNode, first)
	case *parse.WithNode:
		return findInBranch(&n.BranchNode, first)
	}
	return nil
}

func findInBranch(b *parse.BranchNode, first *byte) *parse.TextNode {
	if found := findText(b.List, first); found != nil {
		return found
	}
	return findText(b.ElseList, first)
}
