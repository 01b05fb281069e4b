package chart

import (
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// site is one call of a random or generating function (GeneratedFuncs)
// in a chart's source: the file
// that holds it (a define's file, for a call in a define), the function,
// the source text of its arguments, and its rank among the calls of that
// file with the same function and arguments, in source order. A call's
// value is keyed by its site, so it does not depend on which branches
// ran before it: a password made in one branch and a key made after the
// if are never the same value, and never trade places when the branch
// changes.
type site struct {
	fn, key string
}

// siteFunc names the function a site's call is renamed to.
func siteFunc(i int) string { return fmt.Sprintf("loomrand_%d", i) }

// markSites renames each call of a random function in root's templates
// to a function of its own (siteFunc), and returns the sites in that
// order. The renamed functions are bound per renderer (renderer.funcs).
func markSites(root *template.Template) []site {
	type call struct {
		id   *parse.IdentifierNode
		file string
		args string
	}
	var calls []call
	for _, t := range root.Templates() {
		if t.Tree == nil || t.Tree.Root == nil {
			continue
		}
		file := t.Tree.ParseName
		walkCommands(t.Tree.Root, func(c *parse.CommandNode) {
			id, ok := c.Args[0].(*parse.IdentifierNode)
			if !ok || !(slices.Contains(SeededFuncs, id.Ident) || isGenerated(id.Ident)) {
				return
			}
			var args []string
			for _, a := range c.Args[1:] {
				args = append(args, a.String())
			}
			calls = append(calls, call{id: id, file: file, args: strings.Join(args, " ")})
		})
	}
	// Rank by source position within each file, whatever order the
	// templates were listed in.
	slices.SortStableFunc(calls, func(a, b call) int {
		if c := strings.Compare(a.file, b.file); c != 0 {
			return c
		}
		return int(a.id.Pos) - int(b.id.Pos)
	})
	rank := map[string]int{}
	sites := make([]site, len(calls))
	for i, c := range calls {
		k := c.file + "\x00" + c.id.Ident + "\x00" + c.args
		sites[i] = site{fn: c.id.Ident, key: fmt.Sprintf("%s\x00%d", k, rank[k])}
		rank[k]++
		c.id.Ident = siteFunc(i)
	}
	return sites
}

// walkCommands calls visit for every command under node.
func walkCommands(node parse.Node, visit func(*parse.CommandNode)) {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walkCommands(c, visit)
		}
	case *parse.ActionNode:
		walkCommands(n.Pipe, visit)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walkCommands(c, visit)
		}
	case *parse.CommandNode:
		visit(n)
		for _, a := range n.Args {
			walkCommands(a, visit)
		}
	case *parse.IfNode:
		walkBranch(&n.BranchNode, visit)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, visit)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, visit)
	case *parse.TemplateNode:
		walkCommands(n.Pipe, visit)
	case *parse.ChainNode:
		walkCommands(n.Node, visit)
	}
}

func walkBranch(b *parse.BranchNode, visit func(*parse.CommandNode)) {
	walkCommands(b.Pipe, visit)
	walkCommands(b.List, visit)
	if b.ElseList != nil {
		walkCommands(b.ElseList, visit)
	}
}

// KindRef is a kind named by apiVersion and kind.
type KindRef struct{ APIVersion, Kind string }

// Lookups lists the kinds the chart's templates look up with literal
// arguments (lookup "v1" "Secret" ...), each once, in order of first
// appearance by file.
func (c *Chart) Lookups() ([]KindRef, error) {
	root, _, err := c.Parse()
	if err != nil {
		return nil, err
	}
	var out []KindRef
	for _, t := range root.Templates() {
		if t.Tree == nil || t.Tree.Root == nil {
			continue
		}
		walkCommands(t.Tree.Root, func(cmd *parse.CommandNode) {
			id, ok := cmd.Args[0].(*parse.IdentifierNode)
			if !ok || id.Ident != "lookup" || len(cmd.Args) < 3 {
				return
			}
			av, ok1 := cmd.Args[1].(*parse.StringNode)
			k, ok2 := cmd.Args[2].(*parse.StringNode)
			if ok1 && ok2 && !slices.Contains(out, KindRef{av.Text, k.Text}) {
				out = append(out, KindRef{av.Text, k.Text})
			}
		})
	}
	slices.SortFunc(out, func(a, b KindRef) int { return strings.Compare(a.APIVersion+"/"+a.Kind, b.APIVersion+"/"+b.Kind) })
	return out, nil
}
