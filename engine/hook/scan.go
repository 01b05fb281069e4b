package hook

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// A chart's `helm test` Pods (and its delete and rollback hooks) are never
// applied by Loom. A template file all of whose documents are such hooks,
// by an annotation written literally in the file, is neither executed
// (its random calls need no seed, its lookups watch nothing) nor read by
// `loom rbac` (the kinds it names are no permission of Loom's). The check
// is on the template's text, and errs towards keeping a file: one whose
// annotation comes from a helper, holds an action, or sits in a branch
// that does not hold the document's kind, is executed, and its documents
// are judged by their rendered annotations (SpecOf).

var (
	hookAnnotationLine = regexp.MustCompile(`^(\s+)["']?helm\.sh/hook["']?\s*:\s*(.*?)\s*$`)
	topKindLine        = regexp.MustCompile(`^kind\s*:`)
	actionPattern      = regexp.MustCompile(`(?s){{.*?}}`)
	blockAction        = regexp.MustCompile(`^{{-?\s*(if|with|range|define|block|else|end)\b`)
)

// NeverAppliedFile reports whether every document of a chart template's
// text is a hook Loom never applies, and there is at least one.
func NeverAppliedFile(text []byte) bool {
	if bytes.Count(text, []byte("{{")) != bytes.Count(text, []byte("}}")) || actionAcrossLines(text) {
		return false // an action spans lines: its branches are not followed
	}
	var docs [][]string
	var doc []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), len(text)+1)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "---") {
			docs = append(docs, doc)
			doc = nil
			continue
		}
		doc = append(doc, sc.Text())
	}
	docs = append(docs, doc)
	paths := branchPaths(docs)
	n := 0
	for i, d := range docs {
		switch neverAppliedDoc(d, paths[i]) {
		case docBlank:
		case docNever:
			n++
		default:
			return false
		}
	}
	return n > 0
}

// docVerdict is what the text of one document says of it.
type docVerdict int

const (
	docBlank docVerdict = iota // no object: actions, comments, blanks
	docNever                   // a hook Loom never applies
	docMaybe                   // anything else
)

// neverAppliedDoc judges one document; paths are the branches of its
// lines.
func neverAppliedDoc(lines []string, paths []string) docVerdict {
	kindPath, hookPath, hookValue := "", "", ""
	kinds, hooks, content := 0, 0, false
	for i, l := range lines {
		bare := strings.TrimSpace(actionPattern.ReplaceAllString(l, ""))
		if bare != "" && !strings.HasPrefix(bare, "#") {
			content = true
		}
		if topKindLine.MatchString(l) {
			kinds++
			kindPath = paths[i]
		}
		if m := hookAnnotationLine.FindStringSubmatch(l); m != nil {
			hooks++
			hookPath, hookValue = paths[i], m[2]
			if !underAnnotations(lines[:i], len(m[1])) {
				return docMaybe
			}
		}
	}
	switch {
	case !content:
		return docBlank
	case kinds != 1 || hooks != 1 || kindPath != hookPath || strings.Contains(hookValue, "{{"):
		return docMaybe
	}
	if v, err := strconv.Unquote(hookValue); err == nil {
		hookValue = v
	} else if len(hookValue) >= 2 && hookValue[0] == '\'' && hookValue[len(hookValue)-1] == '\'' {
		hookValue = strings.ReplaceAll(hookValue[1:len(hookValue)-1], "''", "'")
	}
	if h := parseHelmHook(map[string]any{helmrelease.HookAnnotation: hookValue}); h != nil && h.Stage() == NeverHook {
		return docNever
	}
	return docMaybe
}

// underAnnotations reports whether a line indented by indent, after
// lines, is a key of metadata.annotations: the nearest line above it
// indented less is "annotations:", and the nearest above that indented
// less still is "metadata:" at the top level.
func underAnnotations(lines []string, indent int) bool {
	want := []string{"annotations:", "metadata:"}
	for i := len(lines) - 1; i >= 0 && len(want) > 0; i-- {
		l := lines[i]
		bare := strings.TrimSpace(actionPattern.ReplaceAllString(l, ""))
		if bare == "" || strings.HasPrefix(bare, "#") {
			continue
		}
		in := len(l) - len(strings.TrimLeft(l, " \t"))
		if in >= indent {
			continue
		}
		if bare != want[0] || (want[0] == "metadata:" && in != 0) {
			return false
		}
		want, indent = want[1:], in
	}
	return len(want) == 0
}

// branchPaths gives each line of docs the branch of the template it sits
// in: the if, with, range, define or block actions open around it, and
// which of their else branches, as a string. Two lines with the same path
// are both written or neither.
func branchPaths(docs [][]string) [][]string {
	var stack []int
	next := 0
	path := func() string {
		var b strings.Builder
		for _, n := range stack {
			b.WriteString(strconv.Itoa(n))
			b.WriteByte('/')
		}
		return b.String()
	}
	out := make([][]string, len(docs))
	for i, d := range docs {
		out[i] = make([]string, len(d))
		for j, l := range d {
			out[i][j] = path()
			for _, a := range actionPattern.FindAllString(l, -1) {
				m := blockAction.FindStringSubmatch(a)
				if m == nil {
					continue
				}
				next++
				switch m[1] {
				case "end":
					if len(stack) > 0 {
						stack = stack[:len(stack)-1]
					}
				case "else":
					if len(stack) > 0 {
						stack[len(stack)-1] = next
					}
				default:
					stack = append(stack, next)
				}
			}
		}
	}
	return out
}

// actionAcrossLines reports whether an action of text spans lines.
func actionAcrossLines(text []byte) bool {
	for _, l := range bytes.Split(text, []byte("\n")) {
		if bytes.Count(l, []byte("{{")) != bytes.Count(l, []byte("}}")) {
			return true
		}
	}
	return false
}
