package certs

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/object"
)

// InjectFieldManager is the field manager of the caBundle patches and of
// the Secret's writes: not Loom's own ("loom"), whose server-side applies
// of a CRD (--install-crds) would otherwise drop what it does not apply.
const InjectFieldManager = "loom-webhook-ca"

// Injector puts the webhook's caBundle into the CRDs Loom owns whose
// conversion strategy is Webhook. It finds them by the label every CRD
// Loom generates carries (crd.ParentTypeLabel), and owns one when its
// managedFields hold an Apply of Loom's field manager, or the
// loom.dev/adopt annotation names it (as crdinstall.OwnsCRD decides).
type Injector struct {
	// CRDs is the customresourcedefinitions resource.
	CRDs dynamic.NamespaceableResourceInterface
	// FieldManager is Loom's field manager ("loom"), whose CRDs are
	// injected.
	FieldManager string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Expect lists the kinds this Loom serves conversions of (the sets of
	// several versions loaded; nil: every webhook CRD Loom owns). Only
	// their CRDs are injected: another Loom in the cluster, with a CA of
	// its own, keeps its CRDs. While one is missing, or not yet a webhook
	// CRD Loom owns (--install-crds has not installed it yet), Inject says
	// so and the Rotator looks again soon.
	Expect func() []schema.GroupKind
}

// ErrCRDMissing is Inject's error while an expected kind has no webhook
// CRD of Loom's to inject into yet.
var ErrCRDMissing = errors.New("no webhook CRD of Loom's yet")

// Inject sets, in each of Loom's webhook CRDs, the caBundle merged from
// bundle (the Secret's CAs) and the CRD's own still valid CAs
// (MergeBundle), with a JSON merge patch of that one field. It reports
// whether every such CRD now trusts ca (the CA that signs): the Plan's
// injected. A CRD it could not patch is an error, after the others; so is
// an expected kind with no such CRD (ErrCRDMissing).
func (in *Injector) Inject(ctx context.Context, bundle []byte, ca *x509.Certificate) (bool, error) {
	now := time.Now()
	if in.Now != nil {
		now = in.Now()
	}
	list, err := in.CRDs.List(ctx, metav1.ListOptions{LabelSelector: crd.ParentTypeLabel + "=true"})
	if err != nil {
		return false, fmt.Errorf("list the CRDs to inject the caBundle into: %w", err)
	}
	var expect []schema.GroupKind
	if in.Expect != nil {
		expect = in.Expect()
	}
	all, last := true, error(nil)
	found := map[schema.GroupKind]bool{}
	for i := range list.Items {
		c := &list.Items[i]
		if strategy, _, _ := unstructured.NestedString(c.Object, "spec", "conversion", "strategy"); strategy != "Webhook" || !owns(c, in.FieldManager) {
			continue
		}
		group, _, _ := unstructured.NestedString(c.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(c.Object, "spec", "names", "kind")
		gk := schema.GroupKind{Group: group, Kind: kind}
		if in.Expect != nil && !slices.Contains(expect, gk) {
			continue // another Loom's, or a set no longer loaded
		}
		found[gk] = true
		live := liveBundle(c)
		merged, err := MergeBundle(bundle, live, now)
		if err != nil {
			return false, fmt.Errorf("merge the caBundle of CRD %s: %w", c.GetName(), err)
		}
		if string(merged) != string(live) {
			if err := in.patch(ctx, c.GetName(), c.GetResourceVersion(), merged); err != nil {
				all, last = false, err
				continue
			}
			klog.FromContext(ctx).Info("Injected the webhook caBundle", "crd", c.GetName())
			live = merged
		}
		if cas, err := cert.ParseCertsPEM(live); err != nil || !contains(cas, ca) {
			all = false
		}
	}
	if last == nil {
		for _, gk := range expect {
			if !found[gk] {
				last = fmt.Errorf("%w for %s", ErrCRDMissing, gk)
			}
		}
	}
	return all, last
}

// CAInjectorAnnotation is cert-manager's cainjector annotation: the
// Certificate (namespace/name) whose CA it writes into the CRD's caBundle.
const CAInjectorAnnotation = "cert-manager.io/inject-ca-from"

// Annotate sets, on each of Loom's webhook CRDs, the cainjector annotation
// naming certificate (namespace/name): with cert-manager, its cainjector
// writes the caBundle, and Loom does not.
func (in *Injector) Annotate(ctx context.Context, certificate string) error {
	list, err := in.CRDs.List(ctx, metav1.ListOptions{LabelSelector: crd.ParentTypeLabel + "=true"})
	if err != nil {
		return fmt.Errorf("list the CRDs to annotate for cert-manager: %w", err)
	}
	var last error
	for i := range list.Items {
		c := &list.Items[i]
		if strategy, _, _ := unstructured.NestedString(c.Object, "spec", "conversion", "strategy"); strategy != "Webhook" || !owns(c, in.FieldManager) ||
			c.GetAnnotations()[CAInjectorAnnotation] == certificate {
			continue
		}
		p, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{CAInjectorAnnotation: certificate}}})
		if _, err := in.CRDs.Patch(ctx, c.GetName(), types.MergePatchType, p, metav1.PatchOptions{FieldManager: InjectFieldManager}); err != nil {
			last = fmt.Errorf("annotate CRD %s for cert-manager's cainjector: %w", c.GetName(), err)
			continue
		}
		klog.FromContext(ctx).Info("Annotated the CRD for cert-manager's cainjector", "crd", c.GetName(), "certificate", certificate)
	}
	return last
}

// liveBundle is the CRD's caBundle, decoded ("" when it has none).
func liveBundle(c *unstructured.Unstructured) []byte {
	s, _, _ := unstructured.NestedString(c.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// patch sets the CRD's caBundle to bundle, if the CRD is still at
// resourceVersion rv: the bundle was merged from what it held then, and a
// CA another replica added since must not be lost (a conflict is
// retried by the next pass).
func (in *Injector) patch(ctx context.Context, name, rv string, bundle []byte) error {
	p, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rv},
		"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{
			"clientConfig": map[string]any{"caBundle": base64.StdEncoding.EncodeToString(bundle)}}}}})
	if err != nil {
		return err
	}
	if _, err := in.CRDs.Patch(ctx, name, types.MergePatchType, p, metav1.PatchOptions{FieldManager: InjectFieldManager}); err != nil {
		return fmt.Errorf("inject the caBundle into CRD %s: %w", name, err)
	}
	return nil
}

// owns reports whether the CRD is Loom's: applied by its field manager, or
// handed over with the loom.dev/adopt annotation naming it.
func owns(c *unstructured.Unstructured, manager string) bool {
	if c.GetAnnotations()[object.AnnotationAdopt] == manager {
		return true
	}
	for _, f := range c.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
