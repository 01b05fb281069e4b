package object

import "github.com/loom-operator/loom/internal/modes"

// AnnotationManage, set on a child in its template, says how much of the
// child Loom manages (one of Manages); loom.yaml's manage gives the set's
// default, and without either a child is ManageFull. The name says what
// it governs, as Crossplane's managementPolicies and KubeVela's
// apply-once policies do, in Loom's loom.dev/ prefix beside
// AnnotationDeletePolicy.
const AnnotationManage = "loom.dev/manage"

// The values of AnnotationManage.
const (
	// ManageFull creates the child, keeps every field the template sets,
	// reverts drift (as AnnotationDrift says) and prunes it.
	ManageFull = modes.Full
	// ManageCreateOnly creates the child when it is missing and never
	// updates it; it is pruned as AnnotationDeletePolicy says.
	ManageCreateOnly = modes.CreateOnly
	// ManageObserve never writes the child and never creates it: Loom
	// reads it for readiness, status and lookups, and the parent waits
	// while it does not exist. Its template names it and nothing more.
	ManageObserve = modes.Observe
	// ManagePatch applies only the template's fields to an object that
	// belongs to someone else, under Loom's field manager, and never
	// creates or deletes it; when the child stops rendering, or the parent
	// goes, Loom gives its fields back.
	ManagePatch = modes.Patch
)

// Manages are AnnotationManage's values, the default first.
var Manages = modes.Manages

// AnnotationDrift, set on a child in its template, says what Loom does
// when another writer changed a field the template sets (one of Drifts);
// loom.yaml's drift.mode gives the set's default, DriftRepair without.
const AnnotationDrift = "loom.dev/drift"

// The values of AnnotationDrift.
const (
	// DriftRepair applies the template again, taking the field back.
	DriftRepair = modes.Repair
	// DriftWarn leaves the field as the other writer set it, and says so:
	// a Drifted condition on the parent naming the child and the field
	// paths, an Event once per change, and a metric.
	DriftWarn = modes.Warn
)

// Drifts are AnnotationDrift's values, the default first.
var Drifts = modes.Drifts

// AnnotationDriftIgnore, set on a child in its template, lists field
// paths (comma-separated, such as "spec.replicas,
// metadata.annotations.deployment\.kubernetes\.io/revision") that Loom
// sets when it creates the child and never takes back afterwards, for
// fields another controller owns in a way field ownership cannot express.
// loom.yaml's drift.ignore adds paths per kind.
const AnnotationDriftIgnore = "loom.dev/drift-ignore"

// AnnotationSuspend, set to "true" on a parent, stops every write Loom
// makes for that parent's children (applies, prunes, releases) while
// reads, its status and metrics go on. A TemplateSet's spec.suspend does
// the same for every parent of the set.
const AnnotationSuspend = "loom.dev/suspend"

// CheckManage returns an error unless v is one of Manages; the error
// suggests the value v is a typo of.
func CheckManage(v string) error {
	return modes.Check(AnnotationManage, v, Manages)
}

// CheckDrift returns an error unless v is one of Drifts; the error
// suggests the value v is a typo of.
func CheckDrift(v string) error {
	return modes.Check(AnnotationDrift, v, Drifts)
}

// ManageOf returns the management mode of a child with annotations, in a
// set whose default is setDefault ("" is ManageFull). The annotation is
// assumed checked (CheckManage).
func ManageOf(annotations map[string]string, setDefault string) string {
	if v, ok := annotations[AnnotationManage]; ok {
		return v
	}
	if setDefault != "" {
		return setDefault
	}
	return ManageFull
}

// DriftOf returns the drift mode of a child with annotations, in a set
// whose default is setDefault ("" is DriftRepair).
func DriftOf(annotations map[string]string, setDefault string) string {
	if v, ok := annotations[AnnotationDrift]; ok {
		return v
	}
	if setDefault != "" {
		return setDefault
	}
	return DriftRepair
}

// IsSuspended reports whether annotations (a parent's) suspend it.
func IsSuspended(annotations map[string]string) bool {
	return annotations[AnnotationSuspend] == "true"
}
