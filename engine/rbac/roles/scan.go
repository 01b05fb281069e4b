package roles

import (
	"bytes"
	"regexp"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Role is a Role or ClusterRole document of a template.
type Role struct {
	// Kind is Role or ClusterRole.
	Kind string
	// File and Line are where the template names the kind.
	File string
	Line int
	// Rules are the rules written literally, those of every branch of an
	// if or range included. A rule whose resourceNames are computed is
	// kept without them (it then covers every name).
	Rules []rbacv1.PolicyRule
	// Computed are the lines of the rules that a template action writes
	// (toYaml of values, an include): their rules are not in Rules.
	Computed []int
}

// Ref is the roleRef of a RoleBinding or ClusterRoleBinding document.
type Ref struct {
	// Binding is RoleBinding or ClusterRoleBinding.
	Binding string
	// Kind and Name are the roleRef's, when literal.
	Kind, Name string
	// File and Line are where the roleRef (or its computed field) is.
	File string
	Line int
	// Field, when set, names the roleRef's field that a template action
	// computes (roleRef, roleRef.kind or roleRef.name), and Value is its
	// text.
	Field, Value string
}

// Computed reports whether a template action computes the roleRef.
func (r Ref) Computed() bool { return r.Field != "" }

// Found is what Scan found in a set's templates.
type Found struct {
	Roles []Role
	Refs  []Ref
}

// Rules returns the literal rules of every role, in order.
func (f Found) Rules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range f.Roles {
		out = append(out, r.Rules...)
	}
	return out
}

// HasRole reports whether a template writes a role of kind.
func (f Found) HasRole(kind string) bool {
	for _, r := range f.Roles {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// Scan reads the roles and roleRefs of every YAML document in texts
// (template sources by file name), in order of file and line. Only
// top-level keys are read, as engine/rbac's ScanKinds reads kinds.
func Scan(texts map[string][]byte) Found {
	names := make([]string, 0, len(texts))
	for n := range texts {
		names = append(names, n)
	}
	sort.Strings(names)
	var out Found
	for _, name := range names {
		lines := strings.Split(string(texts[name]), "\n")
		start := 0
		for i := 0; i <= len(lines); i++ {
			if i == len(lines) || strings.HasPrefix(lines[i], "---") {
				scanDocument(&out, name, lines, start, i)
				start = i + 1
			}
		}
	}
	return out
}

const rbacGroup = "rbac.authorization.k8s.io"

var topKey = regexp.MustCompile(`^([A-Za-z]+):[ \t]*(.*)$`)

// scanDocument reads the document of lines[from:to] (0-based) of file.
func scanDocument(out *Found, file string, lines []string, from, to int) {
	var kind string
	kindLine := 0
	rbac := true
	keys := map[string]int{} // top-level key → its index in lines
	for i := from; i < to; i++ {
		m := topKey.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if _, ok := keys[m[1]]; !ok {
			keys[m[1]] = i
		}
		switch v := scalar(m[2]); m[1] {
		case "apiVersion":
			if !strings.Contains(v, "{{") && !strings.HasPrefix(v, rbacGroup+"/") {
				rbac = false
			}
		case "kind":
			if kind == "" {
				kind, kindLine = v, i+1
			}
		}
	}
	if !rbac {
		return
	}
	switch kind {
	case "Role", "ClusterRole":
		if i, ok := keys["rules"]; ok {
			role := Role{Kind: kind, File: file, Line: kindLine}
			role.Rules, role.Computed = readRules(lines, i, to)
			out.Roles = append(out.Roles, role)
		} else {
			out.Roles = append(out.Roles, Role{Kind: kind, File: file, Line: kindLine})
		}
	case "RoleBinding", "ClusterRoleBinding":
		if i, ok := keys["roleRef"]; ok {
			out.Refs = append(out.Refs, readRefs(kind, file, lines, i, to)...)
		}
	}
}

// section returns the indices of the lines under the top-level key at
// lines[at], up to the next top-level key or to.
func section(lines []string, at, to int) []int {
	var out []int
	for i := at + 1; i < to; i++ {
		l := lines[i]
		if l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '-' && l[0] != '#' && !strings.HasPrefix(l, "{{") {
			break
		}
		out = append(out, i)
	}
	return out
}

// readRules returns the literal rules under the rules key at lines[at],
// and the (1-based) lines a template action writes.
func readRules(lines []string, at, to int) ([]rbacv1.PolicyRule, []int) {
	inline := strings.TrimSpace(topKey.FindStringSubmatch(lines[at])[2])
	if strings.Contains(inline, "{{") {
		return nil, []int{at + 1}
	}
	var computed []int
	var kept bytes.Buffer
	kept.WriteString("rules: " + inline + "\n")
	for _, i := range section(lines, at, to) {
		l := lines[i]
		if !strings.Contains(l, "{{") {
			kept.WriteString(l + "\n")
			continue
		}
		if onlyControl(l) {
			continue
		}
		if k := strings.TrimLeft(strings.TrimSpace(l), "- "); strings.HasPrefix(k, "resourceNames:") {
			continue // the rule holds every name
		}
		computed = append(computed, i+1)
	}
	var doc struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	if err := yaml.Unmarshal(kept.Bytes(), &doc); err != nil {
		return nil, []int{at + 1}
	}
	return doc.Rules, computed
}

// readRefs returns the roleRef(s) under the roleRef key at lines[at]: one,
// or one per branch of an if that names the role twice.
func readRefs(binding, file string, lines []string, at, to int) []Ref {
	computed := func(line int, field, value string) []Ref {
		return []Ref{{Binding: binding, File: file, Line: line, Field: field, Value: strings.TrimSpace(value)}}
	}
	inline := strings.TrimSpace(topKey.FindStringSubmatch(lines[at])[2])
	type kv struct {
		key, value string
		line       int
	}
	var fields []kv
	switch {
	case strings.HasPrefix(inline, "{"):
		masked := mask(inline)
		if !strings.HasSuffix(masked, "}") {
			return computed(at+1, "roleRef", inline)
		}
		parts := strings.Split(masked[1:len(masked)-1], ",")
		for _, p := range parts {
			k, v, ok := strings.Cut(p, ":")
			if !ok {
				return computed(at+1, "roleRef", inline)
			}
			fields = append(fields, kv{strings.TrimSpace(k), v, at + 1})
		}
	case inline != "" && !strings.HasPrefix(inline, "#"):
		return computed(at+1, "roleRef", inline)
	default:
		for _, i := range section(lines, at, to) {
			l := lines[i]
			if strings.TrimSpace(l) == "" || onlyControl(l) {
				continue
			}
			k, v, ok := strings.Cut(mask(strings.TrimSpace(l)), ":")
			if !ok {
				return computed(i+1, "roleRef", l)
			}
			fields = append(fields, kv{strings.TrimSpace(k), v, i + 1})
		}
	}
	var out []Ref
	ref := Ref{Binding: binding, File: file, Line: at + 1}
	for _, f := range fields {
		if f.key != "kind" && f.key != "name" {
			continue
		}
		v := scalar(f.value)
		if strings.Contains(v, "\x00") {
			return computed(f.line, "roleRef."+f.key, unmask(lines[f.line-1], f.value))
		}
		if f.key == "kind" {
			ref.Kind = v
		} else {
			if ref.Name != "" {
				out = append(out, ref)
			}
			ref.Name, ref.Line = v, f.line
		}
	}
	if ref.Name == "" {
		return nil
	}
	for i := range out {
		if out[i].Kind == "" {
			out[i].Kind = ref.Kind
		}
	}
	return append(out, ref)
}

var action = regexp.MustCompile(`\{\{.*?\}\}`)

// mask replaces each template action of s with a NUL byte, so that the
// commas, braces and colons inside actions do not count.
func mask(s string) string { return action.ReplaceAllString(s, "\x00") }

// unmask returns the text of line that value (masked) stands for: line
// itself when the value cannot be told apart.
func unmask(line, value string) string {
	if acts := action.FindAllString(line, -1); len(acts) == 1 {
		return strings.Replace(strings.TrimSpace(value), "\x00", acts[0], 1)
	}
	return strings.TrimSpace(line)
}

// control matches an action that writes nothing: a branch, a loop, a
// variable, a comment.
var control = regexp.MustCompile(`^\{\{-?\s*(if\s|else|end|range\s|with\s|break|continue|/\*|\$[A-Za-z0-9_]*\s*:?=)`)

// onlyControl reports whether line holds nothing but actions that write
// nothing.
func onlyControl(line string) bool {
	rest := strings.TrimSpace(line)
	if rest == "" {
		return false
	}
	for rest != "" {
		loc := action.FindStringIndex(rest)
		if loc == nil || loc[0] != 0 || !control.MatchString(rest[:loc[1]]) {
			return false
		}
		rest = strings.TrimSpace(rest[loc[1]:])
	}
	return true
}

// scalar strips a YAML scalar's quotes and trailing comment.
func scalar(v string) string {
	v = strings.TrimSpace(v)
	if strings.Contains(v, "{{") || strings.Contains(v, "\x00") {
		return v
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return strings.Trim(v, `"'`)
}
