package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/template"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/hook"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render/driftpolicy"
	"github.com/loom-operator/loom/engine/render/placement"
	"github.com/loom-operator/loom/engine/render/tmpltree"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Render renders the children of parent with no Reader: every lookup
// finds nothing, as in `helm template`. A file that failed after looking
// up one of the children this parent renders is an error here; see
// RenderWith.
//
// The children's strings share memory with the document they were
// decoded from (yamldoc.DecodeFast): a caller that keeps one of them after the
// reconcile, such as a map key, keeps that whole document alive, and
// should copy it (strings.Clone).
func (s *Set) Render(parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out, err := s.RenderWith(parent, nil)
	if err != nil {
		return nil, err
	}
	if len(out.Deferred) > 0 {
		return nil, out.Deferred[0].Err
	}
	return out.Children, nil
}

// RenderWith renders the children of parent, answering lookups from
// reader (nil: every lookup finds nothing). It reads nothing but its
// arguments: the parent is deep-copied before templates see it, so a
// template that mutates its data cannot corrupt the caller's object.
//
// Lookups are checked against loom.yaml's declarations: a kind that is not
// declared may only be read by name, in the parent's namespace, and only
// a child this parent renders; a namespaced kind only in the parent's
// namespace or one declared for it. A refused lookup is an *Error at the
// template's line, like any other.
//
// Every error is an *Error naming the template file and line.
//
// RenderWith has no deadline; RenderContext has its context's.
func (s *Set) RenderWith(parent *unstructured.Unstructured, reader Reader) (*Output, error) {
	return s.RenderContext(context.Background(), parent, reader)
}

// RenderContext is RenderWith stopped when ctx ends: a render still
// running then fails with an *Error at the line of the loop it was in
// (see deadline.go), which errors.Is finds to be ErrDeadline and the
// context's error. A chart set's errors name its files by their path in
// the set (onDisk).
func (s *Set) RenderContext(ctx context.Context, parent *unstructured.Unstructured, reader Reader) (*Output, error) {
	return s.RenderPlaced(ctx, parent, reader, placement.Clusters{})
}

// RenderPlaced is RenderContext with the workload clusters the set may
// place children in (engine/pipeline makes them from the registrations
// its caller gives): the child templates see them as .Clusters, and a
// child whose loom.dev/cluster annotation names a cluster that is not
// registered, or that the set may not use, is an *Error at its file and
// line (placement.ErrNotRegistered, placement.ErrNotAllowed). With the
// zero Clusters every child must go to the cluster Loom runs in.
func (s *Set) RenderPlaced(ctx context.Context, parent *unstructured.Unstructured, reader Reader, clusters placement.Clusters) (*Output, error) {
	out, err := s.renderContext(ctx, parent, reader, clusters)
	return out, s.onDisk(err)
}

// renderContext is RenderPlaced, with a chart's files named as Helm
// names them.
func (s *Set) renderContext(ctx context.Context, parent *unstructured.Unstructured, reader Reader, clusters placement.Clusters) (*Output, error) {
	if err := stopped(ctx); err != nil {
		return nil, &Error{File: s.Name, Err: err}
	}
	if gvk := parent.GroupVersionKind(); gvk != s.gvk {
		return nil, &Error{File: config.File, Err: fmt.Errorf("parent is %s, but this set renders %s", gvk, s.gvk)}
	}
	owner := newOwner(parent, &s.Config)
	data := templateData(parent.DeepCopy().Object)
	data["Clusters"] = clusters.Template()
	r, err := s.pool.get()
	if err != nil {
		return nil, &Error{File: s.Name, Err: err}
	}
	defer s.pool.put(r)
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	r.lk = &lookupState{reader: reader, rules: s.Config.Lookups, specLookups: s.Config.SpecLookups, namespace: parent.GetNamespace(), parentUID: string(parent.GetUID())}
	r.ctx, r.done = ctx, ctx.Done()

	var kids []renderedChild
	var rbacKids []placed
	var failed []Deferred
	seen := map[string]origin{} // group, kind and name → where rendered
	add := func(file string, objs []renderedDoc, reads []Read) error {
		docReads := readsByDoc(objs, reads)
		for i, o := range objs {
			if err := s.checkKind(o.obj); err != nil {
				return &Error{File: file, Line: o.line, Doc: o.doc, Object: objectName(o.obj), Err: err}
			}
			if err := owner.inject(o.obj); err != nil {
				return &Error{File: file, Line: o.line, Doc: o.doc, Object: objectName(o.obj), Err: err}
			}
			if at, err := driftpolicy.Resolve(o.obj, s.Config.Drift); err != nil {
				return &Error{File: file, Line: s.findLine(file, o.line, at), Doc: o.doc, Object: objectName(o.obj), Err: err}
			}
			child := &unstructured.Unstructured{Object: o.obj}
			if err := clusters.Check(child); err != nil {
				line := s.findLine(file, o.line, object.AnnotationCluster)
				return &Error{File: file, Line: line, Doc: o.doc, Object: objectName(o.obj), Err: err}
			}
			if err := checkDuplicate(seen, child, file, o); err != nil {
				return err
			}
			kids = append(kids, renderedChild{obj: child, reads: docReads[i], file: file})
			if child.GroupVersionKind().Group == rbacv1.GroupName {
				rbacKids = append(rbacKids, placed{obj: child, file: file, line: o.line})
			}
		}
		return nil
	}
	var notes string
	var rel hook.Release
	var hooks []Hook
	var generated map[string]string
	if s.chart != nil {
		if rel, err = s.release(parent); err != nil {
			return nil, err
		}
		files, n, gen, err := s.chartFiles(parent, rel, r.lk, r)
		if err != nil {
			return nil, err
		}
		notes, generated = n, gen
		for _, f := range files {
			objs, err := s.decodeFile(f.Name, []byte(f.Text))
			if err != nil {
				return nil, err
			}
			if err := add(f.Name, objs, readsOf(r.lk.reads, f.Name)); err != nil {
				return nil, err
			}
		}
		if kids, hooks, err = orderHooks(r.lk, kids, rel, parent); err != nil {
			return nil, err
		}
	}
	for _, file := range s.files {
		before := len(r.lk.reads)
		objs, err := s.renderFile(r, buf, file, data)
		reads := r.lk.reads[before:]
		if errors.Is(err, ErrDeadline) {
			return nil, err // the files after it would stop at once
		}
		if err != nil {
			failed = append(failed, Deferred{File: file, Err: err, Reads: reads})
			continue
		}
		if err := add(file, objs, reads); err != nil {
			return nil, err
		}
	}
	if err := s.checkRBAC(rbacKids); err != nil {
		return nil, err
	}
	out := &Output{All: r.lk.reads, Notes: notes, Hooks: hooks, Generated: generated}
	if s.chart != nil {
		out.Release = &rel
	}
	// The children a lookup may find: lookups read the cluster Loom runs
	// in, where a child placed in another cluster never is.
	names := make(map[string]bool, len(kids))
	for _, k := range kids {
		if object.TargetCluster(k.obj) == "" {
			names[keyOf(k.obj)] = true
		}
	}
	for _, f := range failed {
		if !readsAny(f.Reads, names) {
			return nil, f.Err
		}
		out.Deferred = append(out.Deferred, f)
	}
	if err := s.refuseForeign(r, buf, parent, data, out.All, names); err != nil {
		return nil, err
	}
	sortForApply(kids)
	out.Children = make([]*unstructured.Unstructured, len(kids))
	out.Reads = make([][]Read, len(kids))
	out.Sources = make([]string, len(kids))
	for i, k := range kids {
		out.Children[i], out.Reads[i], out.Sources[i] = k.obj, k.reads, k.file
	}
	return out, nil
}

// ErrUndeclaredKind marks a child whose kind no template of the set
// names: its kind came out of the parent's spec (a value a chart passes
// to tpl or toYaml), and whoever writes a parent must not choose what
// kinds Loom writes.
var ErrUndeclaredKind = errors.New("kind not declared by the set")

// checkKind refuses a child of a kind the set does not declare: no
// template names it on a top-level kind line and loom.yaml's
// clusterScoped does not list it.
func (s *Set) checkKind(obj map[string]any) error {
	u := unstructured.Unstructured{Object: obj}
	gk := u.GroupVersionKind().GroupKind()
	if s.kinds[gk] {
		return nil
	}
	return fmt.Errorf("%w: %s is named by no template of the set (a top-level kind: line), so it came from the parent's spec; write the kind in a template", ErrUndeclaredKind, gk)
}

// readsOf is the reads made while file rendered.
func readsOf(reads []Read, file string) []Read {
	var out []Read
	for _, rd := range reads {
		if rd.file == file {
			out = append(out, rd)
		}
	}
	return out
}

// renderedChild is one child while a render is assembled.
type renderedChild struct {
	obj   *unstructured.Unstructured
	reads []Read
	file  string // the template file it came from
}

// renderFile runs one template file and decodes its documents.
func (s *Set) renderFile(r *renderer, buf *bytes.Buffer, file string, data map[string]any) ([]renderedDoc, error) {
	buf.Reset()
	r.lk.file = file
	if err := s.execute(r, buf, file, data); err != nil {
		return nil, err
	}
	return s.decodeFile(file, buf.Bytes())
}

// readsByDoc gives each document the lookups made while it was written:
// a lookup at an offset belongs to the first document that ends after it
// (a lookup above a file's first document belongs to that document), or
// to the last one.
func readsByDoc(docs []renderedDoc, reads []Read) [][]Read {
	out := make([][]Read, len(docs))
	if len(docs) == 0 {
		return out
	}
	for _, rd := range reads {
		i := 0
		for i < len(docs)-1 && docs[i].end <= rd.pos {
			i++
		}
		out[i] = append(out[i], rd)
	}
	return out
}

// keyOf identifies a rendered child the way a read names it (Read.key).
func keyOf(obj *unstructured.Unstructured) string {
	return readKey(obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName())
}

// readsAny reports whether one of reads is of a rendered child.
func readsAny(reads []Read, children map[string]bool) bool {
	for _, rd := range reads {
		if rd.Name != "" && children[rd.key()] {
			return true
		}
	}
	return false
}

// foreignReads finds the reads of an undeclared kind that are not of a
// rendered child: the first file that made one, and every such read it
// made, for a second run of that file to refuse (lookupState.refuse).
func foreignReads(reads []Read, children map[string]bool) (string, map[string]bool) {
	var file string
	refuse := map[string]bool{}
	for _, rd := range reads {
		if k := rd.key(); rd.Own && !children[k] && (file == "" || rd.file == file) {
			file = rd.file
			refuse[k] = true
		}
	}
	return file, refuse
}

// refuseForeign fails the render when a lookup of an undeclared kind read
// something that is not a child this parent renders. The file is run
// again with that read refused, so that the error has the lookup's line.
func (s *Set) refuseForeign(r *renderer, buf *bytes.Buffer, parent *unstructured.Unstructured, data map[string]any, reads []Read, children map[string]bool) error {
	file, refuse := foreignReads(reads, children)
	if file == "" {
		return nil
	}
	saved := r.lk.reads
	r.lk.refuse = refuse
	r.lk.reads = nil
	defer func() { r.lk.refuse, r.lk.reads = nil, saved }()
	if s.chart != nil {
		rel, err := s.release(parent)
		if err != nil {
			return err
		}
		if _, _, _, err := s.chartFiles(parent, rel, r.lk, r); err != nil {
			return err
		}
	} else if _, err := s.renderFile(r, buf, file, data); err != nil {
		return err
	}
	// The second run did not reach the lookup: say so without a line.
	return &Error{File: file, Err: fmt.Errorf("%w: a lookup of an undeclared kind read an object that is not a child this parent renders", ErrLookupRefused)}
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
			at, line := tmpltree.OverflowLine(r.t, s.sources, r.out.last, r.out.prev)
			if at == "" {
				at = file
			}
			return &Error{File: at, Line: line, Err: err}
		}
		var de *deadlineError
		if errors.As(err, &de) {
			return locateDeadline(r, file, err, de)
		}
		return keepCause(fromTemplateError(file, err), err)
	}
	return nil
}

// keepCause lets errors.Is and errors.As see, through a located template
// error, what a template function returned (ErrLookupRefused, a Reader's
// error), which fromTemplateError keeps only as text.
func keepCause(e *Error, cause error) *Error {
	var re *Error
	if errors.As(cause, &re) {
		return e // fromTemplateError returned the *Error itself
	}
	e.Err = &causedError{text: e.Err.Error(), cause: cause}
	return e
}

// causedError is a message, and the error it was made from.
type causedError struct {
	text  string
	cause error
}

func (e *causedError) Error() string { return e.text }
func (e *causedError) Unwrap() error { return e.cause }

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
	// A cluster-scoped parent has no namespace: .Namespace is "", a
	// string still, so that it can be passed to lookup.
	namespace, _ := meta["namespace"].(string)
	return map[string]any{
		"Parent":      obj,
		"Spec":        spec,
		"Name":        meta["name"],
		"Namespace":   namespace,
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

// origin is where a child was rendered.
type origin struct {
	file      string
	line, doc int
}

// checkDuplicate rejects a child with the same group, kind and name as one
// rendered before for the same cluster (object.TargetCluster), naming
// where both were rendered: children in two clusters are two objects.
func checkDuplicate(seen map[string]origin, c *unstructured.Unstructured, file string, o renderedDoc) error {
	gk := c.GroupVersionKind().GroupKind()
	target := object.TargetCluster(c)
	key := target + "\x00" + gk.String() + "/" + c.GetName()
	if first, ok := seen[key]; ok {
		in := ""
		if target != "" {
			in = " in cluster " + target
		}
		return &Error{File: file, Line: o.line, Doc: o.doc, Object: objectName(c.Object),
			Err: fmt.Errorf("%s %q%s is also rendered by %s:%d (document %d); child names must be unique per kind", gk, c.GetName(), in, first.file, first.line, first.doc)}
	}
	seen[key] = origin{file: file, line: o.line, doc: o.doc}
	return nil
}

// sortForApply orders children so that what others depend on is applied
// first (namespaced config before workloads), then by kind and name.
func sortForApply(children []renderedChild) {
	sort.SliceStable(children, func(i, j int) bool {
		a, b := children[i].obj, children[j].obj
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
