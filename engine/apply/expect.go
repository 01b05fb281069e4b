package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/openapi"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Option configures an Applier made by New.
type Option func(*shared)

// WithOpenAPI lets the Applier decide "unchanged" for a child it has no
// record of (after a restart, or for a child another process applied)
// from what the API server holds: it computes the managedFields entry
// that its apply of the child would leave, with the type's schema from c
// (the API server's OpenAPI v3, discovery's OpenAPIV3()), and compares it
// with the one the child carries (see proven). Without it, such a child
// is applied once.
func WithOpenAPI(c openapi.Client) Option {
	return func(s *shared) { s.expect = newExpecter(c) }
}

// proven reports whether live, a child Loom has no record of applying
// desired to, is exactly what Loom's apply of desired leaves: it carries
// the hash of desired, is not being deleted, and Loom's managedFields entry
// in it is the one that apply gives (expecter.fingerprint). The API server
// takes a field out of that entry whenever another writer changes or
// removes it, and only Loom's applies put fields in, so this is as exact
// as check's record, which holds the same fingerprint taken from an
// apply's response. A proven child is recorded, so that later checks are
// check's own. Anything that cannot be computed is not proven: an extra
// apply is safe, a missed drift is not.
func (a *Applier) proven(ctx context.Context, ref object.Ref, desired *unstructured.Unstructured, hash string, live *unstructured.Unstructured) bool {
	if a.expect == nil || live == nil || live.GetDeletionTimestamp() != nil || live.GetAnnotations()[AnnotationApplied] != hash {
		return false
	}
	have := pack.Fingerprint(live, a.manager)
	if have == "" {
		return false
	}
	want, err := a.expect.fingerprint(withHash(desired, hash), a.manager)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Cannot compute the fields Loom's apply owns; applying the child", "child", ref.String(), "err", err)
		return false
	}
	if want != have {
		return false
	}
	a.remember(ref, newRecord(hash, live.GetUID(), "", "", have))
	return true
}

// errHasStatus refuses to compute the entry of an object that sets its
// status: the API server leaves out the fields that a resource with a
// status subresource resets (status), which the schema does not say.
var errHasStatus = errors.New("the object sets status")

// retryAfter is how long a group-version whose schema could not be read
// (not published yet, a CRD just created, a server error) applies its
// children before the schema is read again.
const retryAfter = time.Minute

// expecter computes the managedFields entry that the API server gives a
// server-side apply, the way the server does: with the structured-merge-
// diff field manager of apimachinery that the API server runs, over a
// TypeConverter built from the server's own OpenAPI v3 schema of the
// object's group-version. The schema is read once per group-version, when
// an object of it is first asked about, and kept for the life of the
// process.
type expecter struct {
	client openapi.Client
	mu     sync.Mutex
	gvs    map[schema.GroupVersion]*gvManagers
}

// gvManagers are the field managers of one group-version's kinds, or why
// there are none. mu guards every field.
type gvManagers struct {
	mu    sync.Mutex
	tc    managedfields.TypeConverter
	err   error
	when  time.Time // when err happened
	kinds map[string]*managedfields.FieldManager
}

func newExpecter(c openapi.Client) *expecter {
	return &expecter{client: c, gvs: map[schema.GroupVersion]*gvManagers{}}
}

// fingerprint returns the pack.Fingerprint of the managedFields entry that
// manager's server-side apply of sent (the object exactly as Apply sends
// it) gives it, on any object: the fields an apply owns depend on the
// applied object and the schema, not on the object it is applied to.
//
// The entry is computed by the API server's own code path for an apply
// (managedfields.FieldManager: the version check, the strip of apiVersion,
// kind and metadata's identity fields, the merge and the encoding), so the
// keys of associative lists come out as the server's do, with a key field
// the object leaves out filled with the schema's default (a container
// port's protocol, TCP). It fails when it cannot be sure: no schema for
// the group-version or the kind, an object the schema refuses, or an object
// that sets status. sent must be the caller's own copy: the computation
// may change it.
func (x *expecter) fingerprint(sent *unstructured.Unstructured, manager string) (string, error) {
	u, err := x.applied(sent, manager)
	if err != nil {
		return "", err
	}
	fp := pack.Fingerprint(u, manager)
	if fp == "" {
		return "", fmt.Errorf("compute the fields of %s: no entry for %s", sent.GetKind(), manager)
	}
	return fp, nil
}

// applied returns what manager's apply of sent makes of an object of its
// kind that has no fields yet: sent, with the managedFields entry of
// that apply.
func (x *expecter) applied(sent *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	if _, ok := sent.Object["status"]; ok {
		return nil, errHasStatus
	}
	gvk := sent.GroupVersionKind()
	fm, err := x.fieldManager(gvk)
	if err != nil {
		return nil, err
	}
	empty := &unstructured.Unstructured{}
	empty.SetGroupVersionKind(gvk)
	out, err := fm.Apply(empty, sent, manager, true)
	if err != nil {
		return nil, fmt.Errorf("compute the fields of %s: %w", gvk.Kind, err)
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("compute the fields of %s: got a %T", gvk.Kind, out)
	}
	return u, nil
}

// fieldManager returns the field manager of gvk, building the type
// converter of its group-version on first use.
func (x *expecter) fieldManager(gvk schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	gv := gvk.GroupVersion()
	x.mu.Lock()
	g := x.gvs[gv]
	if g == nil {
		g = &gvManagers{kinds: map[string]*managedfields.FieldManager{}}
		x.gvs[gv] = g
	}
	x.mu.Unlock()
	// The children of one group-version wait for its one read of the
	// schema; those of others do not.
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tc == nil && (g.err == nil || time.Since(g.when) > retryAfter) {
		g.tc, g.err = x.typeConverter(gv)
		g.when = time.Now()
	}
	if g.tc == nil {
		return nil, g.err
	}
	if fm := g.kinds[gvk.Kind]; fm != nil {
		return fm, nil
	}
	// No reset fields: an object that sets status, the only field a
	// resource's own apply resets, is refused before (errHasStatus).
	fm, err := managedfields.NewDefaultCRDFieldManager(g.tc, sameVersion{}, noDefaults{}, unstructuredCreater{}, gvk, gv, "", nil)
	if err != nil {
		return nil, fmt.Errorf("field manager of %s: %w", gvk, err)
	}
	g.kinds[gvk.Kind] = fm
	return fm, nil
}

// typeConverter reads gv's OpenAPI v3 document and builds its type
// converter, as the API server builds its own from the same definitions
// (a CRD's published schema included). Only the document's schemas are
// decoded, not its paths: for core/v1 that allocates 5.5 MiB instead of
// 14.
func (x *expecter) typeConverter(gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	path := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "api/" + gv.Version
	}
	paths, err := x.client.Paths()
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI schema of %s: %w", gv, err)
	}
	doc, ok := paths[path]
	if !ok {
		return nil, fmt.Errorf("read the OpenAPI schema of %s: not published", gv)
	}
	raw, err := doc.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI schema of %s: %w", gv, err)
	}
	var d struct {
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("read the OpenAPI schema of %s: %w", gv, err)
	}
	tc, err := managedfields.NewTypeConverter(d.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("type converter of %s: %w", gv, err)
	}
	return tc, nil
}

// sameVersion is the object converter of a field manager that only ever
// sees objects at its own version: it converts nothing.
type sameVersion struct{}

func (sameVersion) Convert(in, out, context any) error {
	return errors.New("conversion is not supported")
}

func (sameVersion) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if want, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); !ok || want != gvk {
		return nil, fmt.Errorf("cannot convert %s to %v", gvk, gv)
	}
	return in, nil
}

func (sameVersion) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// noDefaults defaults nothing: the fields an apply owns are those of the
// applied object, before any defaulting.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// unstructuredCreater makes the empty objects a field manager starts from.
type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
