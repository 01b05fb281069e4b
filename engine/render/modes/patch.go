package modes

import (
	"fmt"
	"slices"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Patched checks a patch child (loom.dev/manage: patch) and binds it as a
// lookup is bound, as Observed does: the object belongs to someone else,
// so its kind must be declared in loom.yaml's lookups (Loom reads it as
// one), and a namespaced one is in parentNS (which it gets when it names
// none) or a namespace declared for its kind. Its template sets whatever
// fields Loom is to own in it. It gets no ownerReference and no Loom
// labels: either would make the garbage collector, or Loom's prune,
// delete the owner's object. clusterScoped says whether the kind is.
//
// A namespaced parent's spec must not reach a cluster-scoped object the
// set did not mean: whoever may create a parent could otherwise have Loom
// label kube-system, say, into a NetworkPolicy's namespaceSelector. So
// such a parent may patch a Namespace only when it is the parent's own or
// one its Namespace lookup lists in namespaces, and another
// cluster-scoped kind only when loom.yaml's clusterScoped declares it
// (declared), as for the cluster-scoped children it creates.
func Patched(obj map[string]any, rules []config.LookupRule, parentNS string, clusterScoped, declared bool) error {
	meta := obj["metadata"].(map[string]any) // validate ensured it
	if ann, _ := meta["annotations"].(map[string]any); ann[object.AnnotationCluster] != nil {
		return fmt.Errorf("%s is %s: Loom patches objects in the cluster it runs in, not in a workload cluster (%s)",
			object.AnnotationManage, object.ManagePatch, object.AnnotationCluster)
	}
	if err := bind(obj, meta, rules, parentNS, clusterScoped, object.ManagePatch); err != nil || !clusterScoped || parentNS == "" {
		return err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	name, _ := meta["name"].(string)
	switch {
	case gk == schema.GroupKind{Kind: "Namespace"}:
		if name != parentNS && !slices.Contains(config.LookupRuleFor(rules, gk).Namespaces, name) {
			return fmt.Errorf("%s is %s: Namespace %q is neither the parent's (%q) nor listed in the namespaces of %s's Namespace lookup",
				object.AnnotationManage, object.ManagePatch, name, parentNS, config.File)
		}
	case !declared:
		return fmt.Errorf("%s is %s: %s is cluster-scoped, and a namespaced parent patches one only when %s's clusterScoped declares its kind",
			object.AnnotationManage, object.ManagePatch, gk, config.File)
	}
	return nil
}

// bind checks that a child Loom reads as a lookup (mode says why) is of a
// kind rules declare, in a namespace it may read, and gives a namespaced
// one that names none parentNS.
func bind(obj, meta map[string]any, rules []config.LookupRule, parentNS string, clusterScoped bool, mode string) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	rule := config.LookupRuleFor(rules, gk)
	if rule == nil {
		return fmt.Errorf("%s is %s: Loom reads this child as a lookup, so %s's lookups must declare %s %s",
			object.AnnotationManage, mode, config.File, apiVersion, kind)
	}
	ns, _ := meta["namespace"].(string)
	switch {
	case clusterScoped:
		if ns != "" {
			return fmt.Errorf("metadata.namespace is %q, but %s is cluster-scoped", ns, gk)
		}
		delete(meta, "namespace")
	case ns == "" && parentNS == "":
		return fmt.Errorf("%s is %s: a cluster-scoped parent's %s child %s must set metadata.namespace", object.AnnotationManage, mode, mode, kind)
	case ns == "":
		meta["namespace"] = parentNS
	case ns != parentNS && !slices.Contains(rule.Namespaces, ns):
		return fmt.Errorf("%s is %s: namespace %q is neither the parent's (%q) nor declared for %s in %s lookups",
			object.AnnotationManage, mode, ns, parentNS, kind, config.File)
	}
	return nil
}

// PatchedDocs returns, per file, the line ranges (first and last line,
// from 1) of the documents whose loom.dev/manage is literally patch, as
// ObservedDocs does for observe: `loom rbac` grants Loom no create or
// delete on a kind that only such documents (and observed ones) name, and
// patch where its lookup declaration may read.
func PatchedDocs(texts map[string][]byte, setDefault string) map[string][][2]int {
	out := map[string][][2]int{}
	_ = eachDoc(texts, func(file string, lines []string, first int) error {
		if mode, _ := literalMode(file, lines, first, setDefault); mode == object.ManagePatch {
			out[file] = append(out[file], [2]int{first + 1, first + len(lines)})
		}
		return nil
	})
	return out
}
