package deadline

import (
	"bytes"
	"text/template/parse"
)

// Walk calls visit for node and each node in the parse tree under it.
func Walk(node parse.Node, visit func(parse.Node)) {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		visit(n)
		for _, c := range n.Nodes {
			Walk(c, visit)
		}
	case *parse.PipeNode:
		if n == nil {
			return
		}
		visit(n)
		for _, c := range n.Cmds {
			Walk(c, visit)
		}
	case *parse.ActionNode:
		visit(n)
		Walk(n.Pipe, visit)
	case *parse.CommandNode:
		visit(n)
		for _, a := range n.Args {
			Walk(a, visit)
		}
	case *parse.ChainNode:
		visit(n)
		Walk(n.Node, visit)
	case *parse.TemplateNode:
		visit(n)
		Walk(n.Pipe, visit)
	case *parse.IfNode:
		visit(n)
		walkBranch(&n.BranchNode, visit)
	case *parse.RangeNode:
		visit(n)
		walkBranch(&n.BranchNode, visit)
	case *parse.WithNode:
		visit(n)
		walkBranch(&n.BranchNode, visit)
	case nil:
	default:
		visit(n)
	}
}

func walkBranch(b *parse.BranchNode, visit func(parse.Node)) {
	Walk(b.Pipe, visit)
	Walk(b.List, visit)
	Walk(b.ElseList, visit)
}

// LineAt is the 1-based line of byte offset pos in src.
func LineAt(src []byte, pos int) int {
	if pos > len(src) {
		pos = len(src)
	}
	return 1 + bytes.Count(src[:pos], []byte("\n"))
}
