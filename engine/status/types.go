package status

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
)

// Condition types Loom sets on every parent.
const (
	// TypeReady is True when every child is applied and ready.
	TypeReady = "Ready"
	// TypeProgressing is True while children are still rolling out.
	TypeProgressing = "Progressing"
	// TypeDegraded is True when rendering or applying failed, or a child failed.
	TypeDegraded = "Degraded"
	// TypeSuspended is True while the parent is suspended (Input.Suspended);
	// its reason and message say where the suspension comes from. A parent
	// that is not suspended has no Suspended condition.
	TypeSuspended = "Suspended"
)

// States are the one-word summaries in status.state.
const (
	// StateBuilding means the children are not all ready yet, and nothing failed.
	StateBuilding = "Building"
	// StateReady means Ready is True and nothing but the status template failed.
	StateReady = "Ready"
	// StateFailed means rendering or applying failed, or a child failed.
	StateFailed = "Failed"
	// StateDeleting means the parent is deleted and waits for what Loom
	// must do first (Input.Deleting says why it waits).
	StateDeleting = "Deleting"
	// StateSuspended means Loom writes none of the parent's children
	// (Input.Suspended): they stay as they are, whatever the spec says.
	StateSuspended = "Suspended"
)

// States are every value of status.state, which a parent's CRD must accept
// (engine/crd's status schema lists them).
var States = []string{StateBuilding, StateReady, StateFailed, StateDeleting, StateSuspended}

// Reasons Loom sets on its conditions.
const (
	// ReasonAllChildrenReady: Ready is True.
	ReasonAllChildrenReady = "AllChildrenReady"
	// ReasonSuspendedBeforeCreation: Ready is False because the parent
	// was suspended before Loom ever rendered it, so none of its children
	// were made.
	ReasonSuspendedBeforeCreation = "SuspendedBeforeCreation"
	// ReasonChildrenNotReady: Ready is False while children roll out.
	ReasonChildrenNotReady = "ChildrenNotReady"
	// ReasonChildrenProgressing: Progressing is True.
	ReasonChildrenProgressing = "ChildrenProgressing"
	// ReasonComplete: Progressing is False because every child is ready.
	ReasonComplete = "Complete"
	// ReasonAsExpected: Degraded is False.
	ReasonAsExpected = "AsExpected"
	// ReasonRenderFailed: the templates did not render.
	ReasonRenderFailed = "RenderFailed"
	// ReasonApplyFailed: applying or pruning a child failed.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonChildFailed: kstatus, or a readiness rule, calls a child Failed.
	ReasonChildFailed = "ChildFailed"
	// ReasonStatusTemplateFailed: the status template failed, or set a
	// field that Loom owns.
	ReasonStatusTemplateFailed = "StatusTemplateFailed"
	// ReasonWaitingForDependency: a child waits for another child it looked
	// up to exist and be ready (Ready is False, Progressing True).
	ReasonWaitingForDependency = "WaitingForDependency"
	// ReasonDependencyCycle: children look each other up, so none of them
	// can be created first (Degraded).
	ReasonDependencyCycle = "DependencyCycle"
	// ReasonRolloutUnavailable: the set has a rollout policy, but Loom
	// cannot read or keep its rollout state (the rollout CRDs are missing,
	// or its RBAC does not cover them), so it does not know which template
	// revision the parent renders and renders none.
	ReasonRolloutUnavailable = "RolloutUnavailable"
	// ReasonServiceAccountUnavailable: the set names a ServiceAccount
	// (loom.yaml's serviceAccountName) that Loom cannot act as for this
	// parent (it does not exist in the parent's namespace), so nothing is
	// rendered or applied.
	ReasonServiceAccountUnavailable = "ServiceAccountUnavailable"
	// ReasonDeletionBlocked: the parent is deleted, and Loom cannot finish
	// what must happen first (release children to keep, delete
	// cluster-scoped children); the message says what it waits on.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonSeedLost: the parent's seed Secret, from which its chart's
	// random values, keys and certificates come, is gone or was replaced;
	// Loom renders nothing rather than rotate them, until the parent is
	// annotated to accept a new seed (the message says how).
	ReasonSeedLost = "SeedLost"
	// ReasonClusterUnreachable: a workload cluster the parent places
	// children in does not answer (or its children there cannot be
	// watched); its children elsewhere are still applied.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonConversionFailed: the parent could not be converted between
	// the version Loom reads it in (the API server's storage version) and
	// the hub its templates read (a set with several versions); the
	// message names the set's file and line at fault.
	ReasonConversionFailed = "ConversionFailed"
)

// Reasoned is a render error that names the Degraded reason it gives
// (ReasonSeedLost), rather than ReasonRenderFailed.
type Reasoned interface {
	error
	Reason() string
}

// Wait is a child, or a template file, that waits for another child.
type Wait struct {
	// Child is the waiting child; nil for a template file that failed
	// while it waits (its children are not known).
	Child *object.Ref
	// Message names the waiting child and the child it waits for.
	Message string
}

// ChildState is the readiness of one child.
type ChildState struct {
	// Ready is true when Status is Current.
	Ready bool
	// Status is the kstatus status: Current, InProgress, Failed, NotFound,
	// Unknown or Terminating.
	Status string
	// Message says why, in kstatus's words or the readiness rule's.
	Message string
	// Ignored is true when a readiness rule leaves the child out of the
	// parent's readiness. Ready still tells the child's own state.
	Ignored bool
}

// Input is everything the parent's status is computed from. Compute reads
// nothing else: no clients, no clock but Now.
type Input struct {
	// Parent is the parent as last read; its status holds the previous
	// conditions, whose lastTransitionTime is kept when nothing changed.
	Parent *unstructured.Unstructured
	// Rendered are the children the templates rendered; nil when RenderErr.
	Rendered []*unstructured.Unstructured
	// RenderErr is the render failure, if any (an *render.Error).
	RenderErr error
	// RolloutErr, when set, says why the parent was not rendered at all:
	// its set's rollout state is unavailable. Like RenderErr, nothing was
	// applied, and the children stay as last reported.
	RolloutErr error
	// IdentityErr, when set, says why Loom cannot act as the set's
	// ServiceAccount for this parent. Like RolloutErr, nothing was
	// rendered or applied, and the children stay as last reported.
	IdentityErr error
	// Deleting, when set, says why a deleted parent still waits for Loom:
	// a child to keep it could not release, or a cluster-scoped child that
	// is not gone. Nothing was rendered; the children stay as last
	// reported.
	Deleting error
	// Suspended, when set, says why the parent is suspended: nothing was
	// rendered or applied, and the children stay as last reported, judged
	// against Live.
	Suspended *object.Suspension
	// Results are the apply results, one per rendered child, plus prunes.
	Results object.ChangeSet
	// Live maps each rendered child to its live object (from the informer
	// cache, or the apply response); a missing entry means not found.
	Live map[object.Ref]*unstructured.Unstructured
	// Rules are the set's readiness overrides from loom.yaml.
	Rules []config.ReadinessRule
	// Extra holds fields the set's status template rendered, merged into
	// the status; ExtraErr is that template's failure, if any.
	Extra    map[string]any
	ExtraErr error
	// Release, when set, is a chart set's release record (engine/hook's
	// Record as a map), written as status.release over anything the
	// status template set there, whatever else failed.
	Release map[string]any
	// Waits are the children and files that wait for a dependency; such a
	// child is rendered but not applied.
	Waits []Wait
	// Cycles name the dependency cycles among the children.
	Cycles []string
	// Now stamps lastTransitionTime on conditions that change.
	Now time.Time
	// Unreachable are the workload clusters, by name, that the parent
	// places children in and that did not answer this pass, each with its
	// last error.
	Unreachable map[string]error
	// Revision, when set, is the template revision the children were
	// rendered from (a set with a rollout policy); it is written as
	// status.templateRevision.
	Revision string
}
