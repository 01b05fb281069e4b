package render

import (
	"fmt"
	"strings"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render/modes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// owner is what injection needs to know of the parent.
type owner struct {
	apiVersion, kind, name, namespace, uid string
	applySetID                             string
	// cluster are the cluster-scoped kinds the set declares.
	cluster map[schema.GroupKind]bool
	// cfg is the set's loom.yaml: its manage default and its lookups,
	// which bind an observed child.
	cfg *config.Config
}

func newOwner(p *unstructured.Unstructured, cfg *config.Config) owner {
	gvk := p.GroupVersionKind()
	return owner{
		cluster: cfg.ClusterScopedKinds(), cfg: cfg,
		apiVersion: p.GetAPIVersion(),
		kind:       gvk.Kind,
		name:       p.GetName(),
		namespace:  p.GetNamespace(),
		uid:        string(p.GetUID()),
		applySetID: object.ParentApplySetID(p),
	}
}

// inject sets the parent's namespace (when the template sets none), a
// controller ownerReference to the parent (for a child placed in a
// workload cluster, its owner annotation and UID label: injectRemote),
// and the labels the apply stage selects children by. A child that the ownerReference could not reach, in
// another namespace or of a cluster-scoped kind, is an error, except a
// cluster-scoped kind the set declares (see injectClusterScoped).
func (o owner) inject(obj map[string]any) error {
	meta := obj["metadata"].(map[string]any) // validate ensured it
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	if ann, _ := meta["annotations"].(map[string]any); ann != nil {
		if _, ok := ann[object.AnnotationOwner]; ok {
			return fmt.Errorf("annotation %s is reserved for Loom and must not be set by a template", object.AnnotationOwner)
		}
	}
	mode, err := modes.Of(obj, o.cfg.Manage)
	if err != nil {
		return err
	}
	switch gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind(); mode {
	case object.ManageObserve:
		return modes.Observed(obj, o.cfg.Lookups, o.namespace, o.cluster[gk] || IsClusterScoped(apiVersion, kind))
	case object.ManagePatch:
		return modes.Patched(obj, o.cfg.Lookups, o.namespace, o.cluster[gk] || IsClusterScoped(apiVersion, kind), o.cluster[gk])
	}
	remote := false
	if ann, _ := meta["annotations"].(map[string]any); ann != nil {
		v, _ := ann[object.AnnotationCluster].(string)
		remote = v != ""
	}
	if o.namespace != "" {
		gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
		if o.cluster[gk] {
			return o.injectClusterScoped(meta, gk, remote)
		}
		if IsClusterScoped(apiVersion, kind) {
			return &object.ClusterScopedChildError{Kind: gk.Kind, Group: gk.Group}
		}
		switch ns, _ := meta["namespace"].(string); ns {
		case "":
			meta["namespace"] = o.namespace
		case o.namespace:
		default:
			return fmt.Errorf("metadata.namespace is %q, but children must live in their parent's namespace %q", ns, o.namespace)
		}
	}
	if remote {
		return o.injectRemote(meta)
	}
	if err := o.setOwnerRef(meta); err != nil {
		return err
	}
	if err := checkDeletePolicy(meta); err != nil {
		return err
	}
	return o.setLabels(meta)
}

// injectRemote marks a child placed in a workload cluster (its
// loom.dev/cluster annotation): no ownerReference, which cannot cross
// clusters (the garbage collector there would find no owner and delete
// the child), but object.AnnotationOwner naming the parent and
// object.LabelParentUID, beside the labels every child carries.
func (o owner) injectRemote(meta map[string]any) error {
	if err := noControllerRef(meta); err != nil {
		return err
	}
	if err := checkDeletePolicy(meta); err != nil {
		return err
	}
	o.setOwnerAnnotation(meta)
	o.setParentUID(meta)
	return o.setLabels(meta)
}

// noControllerRef refuses a controller ownerReference a template wrote:
// Loom's parent must be the controller.
func noControllerRef(meta map[string]any) error {
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok && m["controller"] == true {
			return fmt.Errorf("metadata.ownerReferences names a controller (%v %v), but Loom's parent must be the controller", m["kind"], m["name"])
		}
	}
	return nil
}

// setOwnerAnnotation names the parent in object.AnnotationOwner.
func (o owner) setOwnerAnnotation(meta map[string]any) {
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[object.AnnotationOwner] = object.FormatOwner(metav1.OwnerReference{
		APIVersion: o.apiVersion, Kind: o.kind, Name: o.name, UID: types.UID(o.uid)}, o.namespace)
}

// setParentUID labels a remote child with its parent's UID (none
// offline, where the parent may have none).
func (o owner) setParentUID(meta map[string]any) {
	if o.uid == "" {
		return
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[object.LabelParentUID] = o.uid
}

// injectClusterScoped marks a child of a kind the set declares
// cluster-scoped, for a namespaced parent: no namespace and no
// ownerReference (the garbage collector refuses a namespaced owner of a
// cluster-scoped object), but object.AnnotationOwner naming the parent,
// beside the labels every child carries; placed in a workload cluster
// (remote), object.LabelParentUID too.
func (o owner) injectClusterScoped(meta map[string]any, gk schema.GroupKind, remote bool) error {
	if ns, _ := meta["namespace"].(string); ns != "" {
		return fmt.Errorf("metadata.namespace is %q, but loom.yaml's clusterScoped declares %s cluster-scoped", ns, gk)
	}
	delete(meta, "namespace")
	if err := noControllerRef(meta); err != nil {
		return err
	}
	if err := checkDeletePolicy(meta); err != nil {
		return err
	}
	o.setOwnerAnnotation(meta)
	if remote {
		o.setParentUID(meta)
	}
	return o.setLabels(meta)
}

// checkDeletePolicy refuses a loom.dev/delete-policy annotation that is not
// one of its values: a typo must fail the render, not decide whether a
// child is deleted.
func checkDeletePolicy(meta map[string]any) error {
	ann, _ := meta["annotations"].(map[string]any)
	v, ok := ann[object.AnnotationDeletePolicy]
	if !ok {
		return nil
	}
	s, _ := v.(string)
	return object.CheckDeletePolicy(s)
}

func (o owner) setOwnerRef(meta map[string]any) error {
	if err := noControllerRef(meta); err != nil {
		return err
	}
	refs, _ := meta["ownerReferences"].([]any)
	ref := map[string]any{
		"apiVersion":         o.apiVersion,
		"kind":               o.kind,
		"name":               o.name,
		"controller":         true,
		"blockOwnerDeletion": true,
	}
	if o.uid != "" {
		ref["uid"] = o.uid
	}
	meta["ownerReferences"] = append(refs, ref)
	return nil
}

func (o owner) setLabels(meta map[string]any) error {
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	for k, want := range map[string]string{object.LabelPartOf: o.applySetID, object.LabelManagedBy: object.ManagedByValue} {
		if v, ok := labels[k]; ok && v != want {
			return fmt.Errorf("label %s is reserved for Loom and must not be set by a template", k)
		}
		labels[k] = want
	}
	return nil
}

// clusterScoped lists the cluster-scoped kinds built into Kubernetes, by
// kind and group. Render has no cluster to ask; the apply stage checks
// custom kinds against the API server's RESTMapper.
var clusterScoped = map[string]string{
	"Namespace": "", "Node": "", "PersistentVolume": "", "ComponentStatus": "",
	"ClusterRole": "rbac.authorization.k8s.io", "ClusterRoleBinding": "rbac.authorization.k8s.io",
	"CustomResourceDefinition": "apiextensions.k8s.io", "APIService": "apiregistration.k8s.io",
	"StorageClass": "storage.k8s.io", "CSIDriver": "storage.k8s.io", "CSINode": "storage.k8s.io",
	"VolumeAttachment": "storage.k8s.io", "PriorityClass": "scheduling.k8s.io",
	"RuntimeClass": "node.k8s.io", "IngressClass": "networking.k8s.io",
	"ValidatingWebhookConfiguration":   "admissionregistration.k8s.io",
	"MutatingWebhookConfiguration":     "admissionregistration.k8s.io",
	"ValidatingAdmissionPolicy":        "admissionregistration.k8s.io",
	"ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io",
	"FlowSchema":                       "flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration": "flowcontrol.apiserver.k8s.io",
	"CertificateSigningRequest": "certificates.k8s.io",
}

// IsClusterScoped reports whether apiVersion/kind is a built-in
// cluster-scoped kind.
func IsClusterScoped(apiVersion, kind string) bool {
	group, ok := clusterScoped[kind]
	if !ok {
		return false
	}
	g := ""
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		g = apiVersion[:i]
	}
	return g == group
}
