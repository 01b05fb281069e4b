package render

import (
	"bytes"
	"fmt"
	"strings"
	"text/template/parse"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// parseError is fromTemplateError for a parse of file's text src, except
// that an unexpected end of the text, which text/template reports at the
// file's last line, is reported where the block that is not closed opens.
func parseError(file string, src []byte, err error) *Error {
	e := fromTemplateError(file, err)
	if e.File != file || !strings.HasSuffix(e.Err.Error(), "unexpected EOF") {
		return e
	}
	if word, line, ok := unclosedBlock(src); ok {
		return &Error{File: file, Line: line, Err: fmt.Errorf("unclosed {{ %s }}: no {{ end }} before the end of the file", word)}
	}
	return e
}

// blockWords are the actions that open a block closed by {{ end }}.
var blockWords = map[string]bool{"if": true, "range": true, "with": true, "define": true, "block": true}

// unclosedBlock finds the block that a template's text opens and never
// closes, which text/template reports as "unexpected EOF" at the file's
// last line: the innermost open block when the text ends. It returns the
// block's keyword and 1-based line, or ok false when the actions balance
// (the EOF has another cause). Comments and quoted strings inside actions
// are skipped, so neither "{{ if" in a string nor "}}" in a comment counts.
func unclosedBlock(src []byte) (word string, line int, ok bool) {
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

// strayLine is the line of the first thing a partial prints outside its
// define blocks: text that is not blank, or an action that prints a value
// (declares no variable). It returns 0 when there is none.
func strayLine(tree *parse.Tree) int {
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
