package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// Group and Version are the API group and version of TemplateSet and
// TemplateRevision.
const (
	Group   = "loom.dev"
	Version = "v1alpha1"
)

// GroupVersion is loom.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// The kinds, and the resources the API server serves them as (crds/).
// Both are cluster-scoped.
const (
	TemplateSetKind          = "TemplateSet"
	TemplateRevisionKind     = "TemplateRevision"
	TemplateSetResource      = "templatesets"
	TemplateRevisionResource = "templaterevisions"
	// TemplateSetStatusResource is the status subresource of TemplateSet,
	// the only part of it Loom writes after creating it.
	TemplateSetStatusResource = TemplateSetResource + "/status"
)

// The group-version-resources a dynamic client reaches the kinds with.
var (
	TemplateSetGVR      = GroupVersion.WithResource(TemplateSetResource)
	TemplateRevisionGVR = GroupVersion.WithResource(TemplateRevisionResource)
)

// The labels and annotations Loom puts on TemplateSets and
// TemplateRevisions.
const (
	// SetLabel names the TemplateSet that a TemplateSet or a
	// TemplateRevision belongs to; the revisions of a set are listed by it.
	SetLabel = "loom.dev/set"
	// NamespaceLabel marks the TemplateSets and TemplateRevisions of a Loom
	// that watches one namespace with that namespace.
	NamespaceLabel = "loom.dev/namespace"
	// FolderAnnotation is, on a TemplateSet, the folder of its template set.
	FolderAnnotation = "loom.dev/folder"
)

// Phase is where a rollout stands, as a TemplateSet's status.phase shows
// it (the CRD's enum).
type Phase string

// The phases of a rollout.
const (
	// PhaseComplete: every parent is on the stable revision; nothing to
	// roll out.
	PhaseComplete Phase = "Complete"
	// PhaseProgressing: a candidate moves step by step.
	PhaseProgressing Phase = "Progressing"
	// PhasePaused: a user paused the rollout, or it waits for a resume
	// after a failed step was followed by a new edit.
	PhasePaused Phase = "Paused"
	// PhaseFailed: a step failed with onFailure: pause; the moved parents
	// stay on the candidate until resume, promote, abort or a new edit.
	PhaseFailed Phase = "Failed"
	// PhaseRolledBack: a step failed with onFailure: rollback, or the
	// rollout was aborted; every parent is back on the stable revision.
	PhaseRolledBack Phase = "RolledBack"
)

// The condition types of a TemplateSet, in kstatus's terms so that
// kubectl wait and kstatus-based tools understand them.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// The reasons of a TemplateSet's Ready, Reconciling and Stalled
// conditions: one per phase.
const (
	ReasonComplete      = "Complete"
	ReasonProgressing   = "Progressing"
	ReasonPaused        = "Paused"
	ReasonRolloutFailed = "RolloutFailed"
	ReasonRolledBack    = "RolledBack"
)
