package object

// Labels and annotations that connect a parent to its children. Loom uses
// the ApplySet convention of KEP-3659: the parent is the ApplySet parent,
// and each child carries the part-of label with the parent's ApplySet ID.
const (
	// LabelPartOf is set on every child to its parent's ApplySet ID.
	LabelPartOf = "applyset.kubernetes.io/part-of"
	// LabelApplySetID is set on the parent to its ApplySet ID.
	LabelApplySetID = "applyset.kubernetes.io/id"
	// AnnotationTooling names the tool that manages the ApplySet.
	AnnotationTooling = "applyset.kubernetes.io/tooling"
	// AnnotationGroupKinds lists the group-kinds of the ApplySet's members.
	AnnotationGroupKinds = "applyset.kubernetes.io/contains-group-kinds"
	// LabelManagedBy is set on every child so that Loom's informers can
	// select only Loom's children.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "loom"
	// LabelParentUID is set on a child placed in a workload cluster
	// (AnnotationCluster) to its parent's UID: no ownerReference can
	// cross clusters, so the child names its parent by AnnotationOwner,
	// and this label lets that cluster's children of one parent be
	// selected.
	LabelParentUID = "loom.dev/parent-uid"
)
