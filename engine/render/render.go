package render

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Render renders the children of parent. It reads nothing but its
// arguments: the parent is deep-copied before templates see it, so a
// template that mutates its data cannot corrupt the caller's object.
// The children come back validated, with the parent's namespace, a
// controller ownerReference and the ApplySet labels injected, in a fixed
// order (dependencies first, then by kind and name).
//
// The children's strings share memory with the document they were
// decoded from (fastDecode): a caller that keeps one of them after the
// reconcile, such as a map key, keeps that whole document alive, and
// should copy it (strings.Clone).
//
// Every error is an *Error naming the template file and line.
func (s *Set) Render(parent *unstructured.Unstructured) (children []*unstructured.Unstructured, err error) {
	if gvk := parent.GroupVersionKind(); gvk != s.gvk {
		return nil, &Error{File: ConfigFile, Err: fmt.Errorf("parent is %s, but this set renders %s", gvk, s.gvk)}
	}
	owner := newOwner(parent)
	data := templateData(parent.DeepCopy().Object)
	r, err := s.pool.get()
	if err != nil {
		return nil, &Error{File: s.Name, Err: err}
	}
	defer s.pool.put(r)
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)

	seen := map[string]origin{} // group, kind and name → where rendered
	for _, file := range s.files {
		buf.Reset()
		if err := s.execute(r, buf, file, data); err != nil {
			return nil, err
		}
		objs, err := s.decodeFile(file, buf.Bytes())
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if err := owner.inject(o.obj); err != nil {
				return nil, &Error{File: file, Line: o.line, Doc: o.doc, Object: objectName(o.obj), Err: err}
			}
			child := &unstructured.Unstructured{Object: o.obj}
			if err := checkDuplicate(seen, child, file, o); err != nil {
				return nil, err
			}
			children = append(children, child)
		}
	}
	sortForApply(children)
	return children, nil
}

// execute runs one template file, turning a panic into an *Error.
func (s *Set) execute(r *renderer, buf *bytes.Buffer, file string, data map[string]any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{File: file, Err: fmt.Errorf("panic while rendering: %v", p)}
		}
	}()
	r.out = limitWriter{w: buf, r: r}
	if err := r.t.ExecuteTemplate(&r.out, file, data); err != nil {
		var located template.ExecError
		if errors.Is(err, errOutputTooLarge) && !errors.As(err, &located) {
			// A failed write: text/template drops its location.
			at, line := overflowLine(r.t, s.sources, r.out.last, r.out.prev)
			if at == "" {
				at = file
			}
			return &Error{File: at, Line: line, Err: err}
		}
		return fromTemplateError(file, err)
	}
	return nil
}

// noValue is what text/template prints for a missing map key. Like Helm,
// Loom prints nothing instead, so {{ .Spec.missing }} is empty.
var noValue = []byte("<no value>")

// templateData is the data every template sees.
func templateData(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		spec = map[string]any{}
	}
	return map[string]any{
		"Parent":      obj,
		"Spec":        spec,
		"Name":        meta["name"],
		"Namespace":   meta["namespace"],
		"Labels":      orEmpty(meta["labels"]),
		"Annotations": orEmpty(meta["annotations"]),
	}
}

func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// renderedDoc is one decoded, validated document of a file's output.
type renderedDoc struct {
	obj  map[string]any
	doc  int // 1-based document index
	line int // best-known source line of the document
}

// decodeFile splits a file's output into documents and decodes each one,
// through the cache when the exact bytes were seen before.
func (s *Set) decodeFile(file string, out []byte) ([]renderedDoc, error) {
	if bytes.Contains(out, noValue) {
		out = bytes.ReplaceAll(out, noValue, nil)
	}
	cache := s.caches[file]
	var docs []renderedDoc
	for i, d := range splitDocuments(out) {
		idx := i + 1
		if isBlank(d.text) {
			continue
		}
		if c := cache.get(d.text); c != nil {
			docs = append(docs, renderedDoc{obj: deepCopyMap(c.obj), doc: idx, line: s.docLine(file, idx)})
			continue
		}
		obj, err := decodeYAML(d.text)
		if err != nil {
			return nil, s.yamlError(file, idx, d.text, err)
		}
		if obj == nil { // only comments
			continue
		}
		if err := validate(obj); err != nil {
			return nil, s.validationError(file, idx, obj, err)
		}
		cache.put(d.text, &decoded{obj: obj})
		docs = append(docs, renderedDoc{obj: deepCopyMap(obj), doc: idx, line: s.docLine(file, idx)})
	}
	return docs, nil
}

// document is one YAML document of rendered output.
type document struct {
	text []byte
}

// splitDocuments splits output at YAML document separators: lines that
// start with "---" and whitespace, or are just "---".
func splitDocuments(out []byte) []document {
	var docs []document
	start := 0
	for pos := 0; pos <= len(out); {
		end := bytes.IndexByte(out[pos:], '\n')
		if end < 0 {
			end = len(out)
		} else {
			end += pos
		}
		if isSeparator(out[pos:end]) {
			docs = append(docs, document{text: out[start:pos]})
			// "--- {a: b}" starts the next document on the same line.
			start = pos + 3
			for start < end && (out[start] == ' ' || out[start] == '\t' || out[start] == '\r') {
				start++
			}
			if start == end || out[start] == '#' {
				start = min(end+1, len(out))
			}
		}
		pos = end + 1
	}
	return append(docs, document{text: out[start:]})
}

// isSeparator reports whether a line starts a new YAML document: "---"
// alone, or followed by whitespace (and a comment or the document's first
// content).
func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := line[3:]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r' || rest[0] == '#'
}

func isBlank(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}

// origin is where a child was rendered.
type origin struct {
	file      string
	line, doc int
}

// checkDuplicate rejects a child with the same group, kind and name as one
// rendered before, naming where both were rendered.
func checkDuplicate(seen map[string]origin, c *unstructured.Unstructured, file string, o renderedDoc) error {
	gk := c.GroupVersionKind().GroupKind()
	key := gk.String() + "/" + c.GetName()
	if first, ok := seen[key]; ok {
		return &Error{File: file, Line: o.line, Doc: o.doc, Object: objectName(c.Object),
			Err: fmt.Errorf("%s %q is also rendered by %s:%d (document %d); child names must be unique per kind", gk, c.GetName(), first.file, first.line, first.doc)}
	}
	seen[key] = origin{file: file, line: o.line, doc: o.doc}
	return nil
}

// sortForApply orders children so that what others depend on is applied
// first (namespaced config before workloads), then by kind and name.
func sortForApply(children []*unstructured.Unstructured) {
	sort.SliceStable(children, func(i, j int) bool {
		a, b := children[i], children[j]
		if ra, rb := kindRank(a.GetKind()), kindRank(b.GetKind()); ra != rb {
			return ra < rb
		}
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		return a.GetName() < b.GetName()
	})
}

// applyOrder is Helm's install order, reduced to namespaced kinds.
var applyOrder = []string{
	"NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget",
	"ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim",
	"Role", "RoleBinding", "Service", "DaemonSet", "Pod",
	"ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "Ingress",
}

var applyRank = func() map[string]int {
	m := make(map[string]int, len(applyOrder))
	for i, k := range applyOrder {
		m[k] = i
	}
	return m
}()

func kindRank(kind string) int {
	if r, ok := applyRank[kind]; ok {
		return r
	}
	return len(applyOrder)
}

// deepCopyMap copies a JSON-compatible value tree.
func deepCopyMap(m map[string]any) map[string]any { return runtime.DeepCopyJSON(m) }

// objectName names a decoded object for messages: "Deployment web".
func objectName(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return strings.TrimSpace(kind + " " + name)
}
