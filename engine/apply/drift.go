package apply

// Drift modes other than repair (object.AnnotationDrift warn, and
// object.AnnotationDriftIgnore): what Apply does with a child whose fields
// another writer changed, when it must not simply take them back.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// driftPolicy is what a rendered child's annotations say of drift (render
// resolved the set's defaults into them).
type driftPolicy struct {
	warn bool
	// ignore are the parsed paths of object.AnnotationDriftIgnore.
	ignore [][]string
}

// driftPolicyOf reads desired's drift annotations.
func driftPolicyOf(desired *unstructured.Unstructured) (driftPolicy, error) {
	ann := desired.GetAnnotations()
	p := driftPolicy{warn: object.DriftOf(ann, "") == object.DriftWarn}
	for _, s := range object.DriftIgnoreOf(ann) {
		names, err := object.ParseFieldPath(s)
		if err != nil {
			return p, fmt.Errorf("annotation %s: %w", object.AnnotationDriftIgnore, err)
		}
		p.ignore = append(p.ignore, names)
	}
	return p, nil
}

// active reports whether the policy is other than plain repair.
func (p driftPolicy) active() bool { return p.warn || len(p.ignore) > 0 }

// driftDecision is what decideDrift found for a child that the record and
// the proof did not call unchanged.
type driftDecision struct {
	// unchanged: send nothing; drifted names the fields left as another
	// writer made them (warn), empty for a child whose only changes are
	// in ignored fields.
	unchanged bool
	drifted   []string
	// sent is the object to apply otherwise: desired without the ignored
	// fields Loom no longer owns. full is the live object read whole, nil
	// when none was read.
	sent, full *unstructured.Unstructured
	// reverted names the fields warned of earlier that applying a new
	// desired object takes back.
	reverted []string
	// valuesKept: the apply changes no value (the other writer set the
	// drifted values back), so it reverts nothing.
	valuesKept bool
}

// warned is what Apply last found of a drifted child in warn mode: the
// desired object (hash), the child (uid) at one resourceVersion, and the
// fields it named. Kept only while the child is drifted, so that a
// reconcile of an unchanged, drifted child reads nothing.
type warned struct {
	hash, uid digest
	rv        version
	drifted   []string
}

// decideDrift decides a child whose drift mode is not plain repair (p is
// active) and that the record or proof did not call unchanged. It reads the
// child whole when the cache holds it slim (once per change of the child
// in warn mode: see warned).
//
//   - The fields to apply are desired's, less the ignored fields Loom no
//     longer owns in the live object: another writer took or removed them
//     since Loom's create, and they stay as that writer left them.
//     Applying without a field Loom still owns would remove it, so fields
//     Loom still owns are applied (see withoutUnowned).
//   - If the live object carries the hash of desired (the templates did
//     not change since Loom's last apply) and Loom's entry is exactly what
//     applying those fields gives, nothing is sent: the only changes were
//     to ignored fields. The child is recorded, so later reconciles are
//     the record's.
//   - In warn mode, with the same hash, the fields that applying would
//     give Loom and that its live entry lacks are the drift: nothing is
//     sent, and they are named. If applying would change no value (the
//     other writer set the values back), the apply goes out and takes the
//     fields back into Loom's entry, changing nothing.
//   - Otherwise the fields are applied, with force, as in repair mode.
func (a *Applier) decideDrift(ctx context.Context, gvr schema.GroupVersionResource, ref object.Ref, desired *unstructured.Unstructured,
	hash string, live *unstructured.Unstructured, p driftPolicy) (driftDecision, error) {
	sameDesired := live.GetAnnotations()[AnnotationApplied] == hash && live.GetDeletionTimestamp() == nil
	if p.warn && sameDesired {
		if w, ok := a.warnedOf(ref); ok && w.hash == digestOf(hash) && w.uid == digestOf(string(live.GetUID())) && w.rv == versionOf(live.GetResourceVersion()) {
			return driftDecision{unchanged: true, drifted: w.drifted}, nil
		}
	}
	var d driftDecision
	if p.warn && !sameDesired {
		if w, ok := a.warnedOf(ref); ok {
			d.reverted = w.drifted
		}
	}
	if len(p.ignore) == 0 && !sameDesired {
		d.sent = desired // a new desired object, applied whole
		return d, nil
	}
	full := live
	if pack.IsSlim(live) {
		got, err := a.client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return d, fmt.Errorf("read %s to decide its drift: %w", ref, err)
		}
		full = got
		sameDesired = sameDesired && full.GetAnnotations()[AnnotationApplied] == hash && full.GetUID() == live.GetUID()
	}
	d.full = full
	owned := ownedFields(full, a.manager)
	d.sent = withoutUnowned(desired, p.ignore, owned)
	if !sameDesired || a.expect == nil {
		if p.warn && sameDesired {
			return a.warnOf(ref, hash, full, []string{object.DriftUnnamed}), nil
		}
		return d, nil
	}
	want, err := a.expect.applied(withHash(d.sent, hash), a.manager)
	if err != nil {
		if p.warn {
			return a.warnOf(ref, hash, full, []string{object.DriftUnnamed}), nil
		}
		return d, nil // applied, as a child that cannot be proven is
	}
	if pack.Fingerprint(want, a.manager) == pack.Fingerprint(full, a.manager) {
		a.forgetWarned(ref)
		a.remember(ref, newRecord(hash, full.GetUID(), "", "", pack.Fingerprint(full, a.manager)))
		return driftDecision{unchanged: true}, nil
	}
	if !p.warn {
		return d, nil
	}
	missing := paths(ownedFields(want, a.manager).Difference(owned).Leaves())
	if len(missing) == 0 || a.changesNoValue(d.sent, hash, full) {
		a.forgetWarned(ref)
		d.valuesKept = true
		return d, nil // nothing to warn of: the apply changes no value
	}
	return a.warnOf(ref, hash, full, missing), nil
}

// warnOf remembers that the child full, applied from desired (hash), has
// drifted at fields, and decides it unchanged, naming them.
func (a *Applier) warnOf(ref object.Ref, hash string, full *unstructured.Unstructured, fields []string) driftDecision {
	w := warned{hash: digestOf(hash), uid: digestOf(string(full.GetUID())), rv: versionOf(full.GetResourceVersion()), drifted: fields}
	a.mu.Lock()
	if a.warned == nil {
		a.warned = map[recordKey]warned{}
	}
	a.warned[ownKey(ref)] = w
	a.mu.Unlock()
	return driftDecision{unchanged: true, drifted: fields}
}

func (a *Applier) warnedOf(ref object.Ref) (warned, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.warned[keyOf(ref)]
	return w, ok
}

func (a *Applier) forgetWarned(ref object.Ref) {
	a.mu.Lock()
	delete(a.warned, keyOf(ref))
	a.mu.Unlock()
}

// changesNoValue reports whether applying sent (with hash) to full would
// leave every value as it is: computed with the API server's merge over
// the type's schema, on full without its managedFields (so no field is
// removed, only set). An error says it would change something.
func (a *Applier) changesNoValue(sent *unstructured.Unstructured, hash string, full *unstructured.Unstructured) bool {
	base := full.DeepCopy()
	unstructured.RemoveNestedField(base.Object, "metadata", "managedFields")
	merged, err := a.expect.merge(base.DeepCopy(), withHash(sent, hash), a.manager)
	if err != nil {
		return false
	}
	unstructured.RemoveNestedField(merged.Object, "metadata", "managedFields")
	return equality.Semantic.DeepEqual(base.Object, merged.Object)
}

// withoutUnowned returns desired without the fields under the ignore
// paths that owned (Loom's live entry) does not hold: each map key under
// such a path is one field, and so is a list or a scalar; a map left empty
// by the removal goes too. desired itself is returned when nothing is
// left out.
func withoutUnowned(desired *unstructured.Unstructured, ignore [][]string, owned *fieldpath.Set) *unstructured.Unstructured {
	var drop [][]string
	for _, names := range ignore {
		v, ok := nestedValue(desired.Object, names)
		if !ok {
			continue
		}
		eachUnit(names, v, func(unit []string) {
			if !ownsAny(owned, unit) && !loomsOwn(unit) {
				drop = append(drop, unit)
			}
		})
	}
	if len(drop) == 0 {
		return desired
	}
	out := desired.DeepCopy()
	for _, unit := range drop {
		removeAndPrune(out.Object, unit)
	}
	return out
}

// loomsOwn reports whether the field at names is the child's identity
// (apiVersion, kind, its name and namespace, which no managedFields entry
// holds) or one Loom itself marks its children with (its loom.dev/
// annotations, its labels, the owner reference): no ignore path gives
// those away.
func loomsOwn(names []string) bool {
	if len(names) == 1 {
		return names[0] == "apiVersion" || names[0] == "kind"
	}
	if names[0] != "metadata" {
		return false
	}
	switch {
	case names[1] == "name" || names[1] == "namespace" || names[1] == "ownerReferences":
		return true
	case names[1] == "annotations" && len(names) > 2:
		return strings.HasPrefix(names[2], "loom.dev/")
	case names[1] == "labels" && len(names) > 2:
		return names[2] == object.LabelPartOf || names[2] == object.LabelManagedBy || names[2] == object.LabelParentUID
	}
	return false
}

// nestedValue returns the value at names in obj.
func nestedValue(obj map[string]any, names []string) (any, bool) {
	var cur any = obj
	for _, n := range names {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[n]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// eachUnit calls f with the path of each field under path whose value is
// v: each key of a non-empty map, recursively, and anything else whole.
func eachUnit(path []string, v any, f func([]string)) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		f(path)
		return
	}
	for k, sub := range m {
		eachUnit(append(append([]string(nil), path...), k), sub, f)
	}
}

// ownsAny reports whether owned holds the field at names or a field under
// it.
func ownsAny(owned *fieldpath.Set, names []string) bool {
	p := make(fieldpath.Path, len(names))
	for i := range names {
		p[i] = fieldpath.PathElement{FieldName: &names[i]}
	}
	if owned.Has(p) {
		return true
	}
	under := owned
	for _, pe := range p {
		if under = under.WithPrefix(pe); under.Empty() {
			return false
		}
	}
	return true
}

// removeAndPrune removes the field at names from obj, and then each map
// on its way that the removal left empty.
func removeAndPrune(obj map[string]any, names []string) {
	unstructured.RemoveNestedField(obj, names...)
	for i := len(names) - 1; i > 0; i-- {
		m, ok := nestedValue(obj, names[:i])
		if mm, isMap := m.(map[string]any); !ok || !isMap || len(mm) > 0 {
			return
		}
		unstructured.RemoveNestedField(obj, names[:i]...)
	}
}

// paths formats a set's fields as sorted paths such as "spec.replicas".
func paths(s *fieldpath.Set) []string {
	var out []string
	s.Iterate(func(p fieldpath.Path) {
		out = append(out, strings.TrimPrefix(p.String(), "."))
	})
	sort.Strings(out)
	return out
}

// merge returns what manager's forced apply of sent makes of base, with
// the API server's merge over the type's schema.
func (x *expecter) merge(base, sent *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	fm, err := x.fieldManager(sent.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	out, err := fm.Apply(base, sent, manager, true)
	if err != nil {
		return nil, fmt.Errorf("merge %s: %w", sent.GetKind(), err)
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("merge %s: got a %T", sent.GetKind(), out)
	}
	return u, nil
}

// previewed is desired as Apply would send it to the live object now, for
// DryRun: without the ignored fields (object.AnnotationDriftIgnore) that
// Loom no longer owns in the live object, read here. A child that does not
// exist yet is created whole.
func (a *Applier) previewed(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	p, err := driftPolicyOf(desired)
	if err != nil || len(p.ignore) == 0 {
		return desired, err
	}
	live, err := a.client.Resource(gvr).Namespace(desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return desired, nil
	case err != nil:
		return nil, err
	}
	return withoutUnowned(desired, p.ignore, ownedFields(live, a.manager)), nil
}
