package schemacheck

import (
	"fmt"
	"sort"
	"text/template"
	"text/template/parse"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loom-operator/loom/engine/render/deadline"
)

// maxCheckDepth caps how deeply Check follows include and template
// into defines; a deeper chain is left unchecked.
const maxCheckDepth = 50

// Templates is what Check reads of a template set.
type Templates struct {
	// Root holds every template of the set, files and defines, parsed
	// into one tree set, as include and template reach them.
	Root *template.Template
	// Files are the child templates, each checked with the template
	// data as dot.
	Files []string
	// Status is the status template's name, or "" when there is none;
	// its data has .Children.
	Status string
	// Kind is the parent's kind, which the messages name.
	Kind string
	// Sources are the templates' texts by file, for the lines of
	// problems.
	Sources map[string][]byte
}

// Problem is one path into the parent's spec that a template reads and
// the spec's schema cannot hold.
type Problem struct {
	// File is the template file that reads the path.
	File string
	// Line is the 1-based line in File.
	Line int
	// Msg says what is wrong (".Spec.replcas is not in the schema of
	// App (did you mean replicas?)").
	Msg string
}

// String formats a problem in the file:line form editors understand.
func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Check checks every path into the parent's spec that t's templates read
// against spec, the schema of the parent's spec, and returns a Problem at
// the template's file and line for each path the schema cannot hold,
// each once, sorted by file and line.
//
// It follows the data's type through field chains ($ and variables
// included), index, get, hasKey and dig with constant keys, default with
// an empty default, with and range blocks, and the defines that include
// and template call with a known argument. Where the type is not known (a
// function's result, a variable assigned with =, a free-form part of the
// schema: x-kubernetes-preserve-unknown-fields, an object without
// properties, a map's keys) it stops: it reports nothing it is not sure of.
func Check(t Templates, spec *apiextv1.JSONSchemaProps) []Problem {
	c := &schemaChecker{set: t, spec: spec, found: map[string]Problem{}, done: map[string]bool{}}
	for _, file := range t.Files {
		c.checkTemplate(file, &value{kind: dataValue})
	}
	if t.Status != "" {
		c.checkTemplate(t.Status, &value{kind: dataValue, status: true})
	}
	problems := make([]Problem, 0, len(c.found))
	for _, p := range c.found {
		problems = append(problems, p)
	}
	sort.Slice(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Msg < b.Msg
	})
	return problems
}

// valueKind is what Check knows of a value.
type valueKind int

const (
	dataValue   valueKind = iota // the template data (.Spec, .Name, ...)
	parentValue                  // .Parent, the parent object
	schemaValue                  // a value the spec's schema describes
)

// value is the type of a value in a template; nil is unknown.
type value struct {
	kind valueKind
	// status marks the status template's data, which has .Children.
	status bool
	// schema describes a schemaValue; path names it (".Spec.db").
	schema *apiextv1.JSONSchemaProps
	path   string
}

// key identifies a value for memoizing the check of a define.
func (v *value) key() string {
	return fmt.Sprintf("%d/%t/%s", v.kind, v.status, v.path)
}

// schemaChecker holds one Check run.
type schemaChecker struct {
	set   Templates
	spec  *apiextv1.JSONSchemaProps
	found map[string]Problem // by message, so that each is reported once
	done  map[string]bool    // define and argument key: checked or being checked
	depth int
}

// scope is the state of the walk through one template: dot, variables.
type scope struct {
	file string
	dot  *value
	vars []variable
	// assigned are the variables the template assigns with =: their
	// type depends on the order the template runs in, so it is unknown.
	assigned map[string]bool
}

type variable struct {
	name string
	v    *value
}

// checkTemplate checks the template (a file or a define) named name, run
// with dot, once per name and dot.
func (c *schemaChecker) checkTemplate(name string, dot *value) {
	key := name + "\x00" + dot.key()
	t := c.set.Root.Lookup(name)
	if c.done[key] || c.depth >= maxCheckDepth || t == nil || t.Tree == nil || t.Tree.Root == nil {
		return
	}
	c.done[key] = true
	c.depth++
	defer func() { c.depth-- }()
	sc := &scope{file: t.Tree.ParseName, dot: dot, vars: []variable{{"$", dot}}, assigned: map[string]bool{}}
	deadline.Walk(t.Tree.Root, func(n parse.Node) {
		if p, ok := n.(*parse.PipeNode); ok && p.IsAssign {
			for _, d := range p.Decl {
				sc.assigned[d.Ident[0]] = true
			}
		}
	})
	c.walk(sc, t.Tree.Root)
}

// walk checks the nodes of a template's body.
func (c *schemaChecker) walk(sc *scope, node parse.Node) {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, item := range n.Nodes {
			c.walk(sc, item)
		}
	case *parse.ActionNode:
		c.pipe(sc, n.Pipe, true)
	case *parse.IfNode:
		c.branch(sc, &n.BranchNode, false)
	case *parse.WithNode:
		c.branch(sc, &n.BranchNode, true)
	case *parse.RangeNode:
		c.rangeNode(sc, n)
	case *parse.TemplateNode:
		if v := c.pipe(sc, n.Pipe, false); v != nil {
			c.checkTemplate(n.Name, v)
		}
	}
}

// branch walks an if or a with: with moves dot into its list.
func (c *schemaChecker) branch(sc *scope, b *parse.BranchNode, with bool) {
	mark := len(sc.vars)
	v := c.pipe(sc, b.Pipe, true)
	inner := len(sc.vars)
	dot := sc.dot
	if with {
		sc.dot = v
	}
	c.walk(sc, b.List)
	sc.dot, sc.vars = dot, sc.vars[:inner]
	c.walk(sc, b.ElseList)
	sc.vars = sc.vars[:mark]
}

// rangeNode walks a range: dot, and its last variable, are an element.
func (c *schemaChecker) rangeNode(sc *scope, n *parse.RangeNode) {
	mark := len(sc.vars)
	elem := c.element(c.pipe(sc, n.Pipe, false))
	switch decl := n.Pipe.Decl; {
	case n.Pipe.IsAssign:
	case len(decl) == 1:
		sc.vars = append(sc.vars, variable{decl[0].Ident[0], elem})
	case len(decl) == 2:
		sc.vars = append(sc.vars, variable{decl[0].Ident[0], nil}, variable{decl[1].Ident[0], elem})
	}
	inner := len(sc.vars)
	dot := sc.dot
	sc.dot = elem
	c.walk(sc, n.List)
	sc.dot, sc.vars = dot, sc.vars[:inner]
	c.walk(sc, n.ElseList)
	sc.vars = sc.vars[:mark]
}

// element is the type of the elements of a list or a map.
func (c *schemaChecker) element(v *value) *value {
	if v == nil || v.kind != schemaValue {
		return nil
	}
	s := v.schema
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return &value{kind: schemaValue, schema: s.Items.Schema, path: v.path + "[*]"}
	case s.Type == "object" && len(s.Properties) == 0 && s.AdditionalProperties != nil &&
		s.AdditionalProperties.Allows && s.AdditionalProperties.Schema != nil:
		return &value{kind: schemaValue, schema: s.AdditionalProperties.Schema, path: v.path + "[*]"}
	}
	return nil
}

// pipe checks a pipeline and returns its value's type. With declare, it
// declares the variables the pipeline binds (range binds its own).
func (c *schemaChecker) pipe(sc *scope, p *parse.PipeNode, declare bool) *value {
	if p == nil {
		return nil
	}
	var v *value
	for i, cmd := range p.Cmds {
		v = c.command(sc, cmd, v, i > 0)
	}
	if declare && !p.IsAssign && len(p.Decl) == 1 {
		sc.vars = append(sc.vars, variable{p.Decl[0].Ident[0], v})
	}
	return v
}

// arg is one argument of a command: a node, or the value piped in.
type arg struct {
	node parse.Node // nil for the piped value
	v    *value
}

// command checks one command of a pipeline and returns its result's type.
func (c *schemaChecker) command(sc *scope, cmd *parse.CommandNode, piped *value, hasPiped bool) *value {
	var args []arg
	for _, a := range cmd.Args[1:] {
		args = append(args, arg{node: a, v: c.operand(sc, a)})
	}
	if hasPiped {
		args = append(args, arg{v: piped})
	}
	id, ok := cmd.Args[0].(*parse.IdentifierNode)
	if !ok {
		v := c.operand(sc, cmd.Args[0])
		if len(args) > 0 {
			return nil // a method call, or a value given arguments
		}
		return v
	}
	return c.call(sc, id, args)
}

// call gives the result type of the functions that pass a value through.
func (c *schemaChecker) call(sc *scope, id *parse.IdentifierNode, args []arg) *value {
	n := len(args)
	switch id.Ident {
	case "index":
		if n > 0 && args[0].node != nil {
			return c.keys(sc, args[0].v, args[1:], true)
		}
	case "get":
		if n == 2 {
			return c.keys(sc, args[0].v, args[1:], false)
		}
	case "hasKey":
		if n == 2 {
			c.keys(sc, args[0].v, args[1:], false)
		}
	case "dig":
		if n >= 3 {
			v := c.keys(sc, args[n-1].v, args[:n-2], false)
			if emptyDefault(args[n-2].node) {
				return v
			}
		}
	case "default":
		if n == 2 && emptyDefault(args[0].node) {
			return args[1].v
		}
	case "required":
		if n == 2 {
			return args[1].v
		}
	case "include":
		if n == 2 && args[1].v != nil {
			if name, ok := args[0].node.(*parse.StringNode); ok {
				c.checkTemplate(name.Text, args[1].v)
			}
		}
	}
	return nil
}

// emptyDefault reports whether a default is a literal or an empty dict or
// list: reading a field of it gives nothing, as a missing field would, so
// that the value keeps the type of what it defaults.
func emptyDefault(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return true
	case *parse.IdentifierNode:
		return n.Ident == "dict" || n.Ident == "list"
	case *parse.PipeNode:
		if len(n.Cmds) == 1 && len(n.Cmds[0].Args) == 1 {
			return emptyDefault(n.Cmds[0].Args[0])
		}
	}
	return false
}

// keys follows constant keys (strings; with ints, list indexes) from v,
// as index, get, hasKey and dig do, and stops at the first other key.
func (c *schemaChecker) keys(sc *scope, v *value, keys []arg, ints bool) *value {
	for _, k := range keys {
		switch n := k.node.(type) {
		case *parse.StringNode:
			v = c.field(sc, v, n.Text, n.Pos)
		case *parse.NumberNode:
			if !ints || !n.IsInt || v == nil || v.kind != schemaValue || v.schema.Type != "array" {
				return nil
			}
			v = c.element(v)
		default:
			return nil
		}
	}
	return v
}

// operand checks an argument and returns its type.
func (c *schemaChecker) operand(sc *scope, node parse.Node) *value {
	switch n := node.(type) {
	case *parse.DotNode:
		return sc.dot
	case *parse.FieldNode:
		return c.fields(sc, sc.dot, n.Ident, n.Pos)
	case *parse.VariableNode:
		return c.fields(sc, sc.lookup(n.Ident[0]), n.Ident[1:], n.Pos)
	case *parse.ChainNode:
		return c.fields(sc, c.operand(sc, n.Node), n.Field, n.Pos)
	case *parse.PipeNode:
		return c.pipe(sc, n, false)
	}
	return nil
}

// lookup is the type of variable name: the innermost one, unless the
// template assigns it with =.
func (sc *scope) lookup(name string) *value {
	if sc.assigned[name] {
		return nil
	}
	for i := len(sc.vars) - 1; i >= 0; i-- {
		if sc.vars[i].name == name {
			return sc.vars[i].v
		}
	}
	return nil
}

// fields follows a chain of field names from v.
func (c *schemaChecker) fields(sc *scope, v *value, names []string, pos parse.Pos) *value {
	for _, name := range names {
		v = c.field(sc, v, name, pos)
	}
	return v
}
