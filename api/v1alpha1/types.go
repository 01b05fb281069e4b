package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateSet is the rollout of one template set's revisions to its
// parents. Loom makes one per template set with a rollout policy, named
// after the set's folder; Loom writes its status, and users (or loom
// rollout) write its spec.
type TemplateSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what users ask of the rollout. Loom never writes it.
	Spec TemplateSetSpec `json:"spec,omitzero"`
	// Status is the rollout as Loom last decided it; a restarted Loom
	// resumes from here.
	Status TemplateSetStatus `json:"status,omitzero"`
}

// TemplateSetSpec holds the user's controls of a rollout.
type TemplateSetSpec struct {
	// Paused stops the rollout from taking its next step.
	Paused bool `json:"paused,omitempty"`
	// Resume, set to a new value (any token, e.g. a time), retries a step
	// that failed with onFailure pause.
	Resume string `json:"resume,omitempty"`
	// Promote, naming the candidate revision, makes it stable for every
	// parent at once.
	Promote string `json:"promote,omitempty"`
	// Abort, naming the candidate revision, rolls it back and rejects it
	// until the templates change again.
	Abort string `json:"abort,omitempty"`
	// Suspend stops every write Loom makes for the children of every
	// parent of the set; their status goes on, with a Suspended condition
	// (object.SuspensionOf). Clearing it reconciles every parent at once.
	Suspend bool `json:"suspend,omitempty"`
}

// TemplateSetStatus is a set's rollout as Loom keeps it: the fields
// engine/rollout's State decides (RolloutState), the set and parent kind
// the rollout belongs to, and the conditions.
type TemplateSetStatus struct {
	RolloutState `json:",inline"`

	// Set is the template set's folder.
	Set string `json:"set"`
	// ParentKind is the parents' apiVersion and kind, e.g.
	// example.loom.dev/v1/MyResource.
	ParentKind string `json:"parentKind"`
	// Conditions are Ready, Reconciling and Stalled, and Loom's own.
	Conditions []metav1.Condition `json:"conditions"`
}

// RolloutState is where a set's rollout stands: what engine/rollout's
// Decide reads and returns, kept in the TemplateSet's status.
type RolloutState struct {
	// StableRevision is the revision every parent not moved renders.
	StableRevision string `json:"stableRevision,omitempty"`
	// CandidateRevision is the revision being rolled out, if any.
	CandidateRevision string `json:"candidateRevision,omitempty"`
	// RejectedRevision is a candidate rolled back or aborted, not tried
	// again until the templates change.
	RejectedRevision string `json:"rejectedRevision,omitempty"`
	// Phase is where the rollout stands.
	Phase Phase `json:"phase,omitempty"`
	// Step is the current step, counted from 1; 0 when no rollout runs.
	Step int `json:"step,omitempty"`
	// Steps is how many steps the policy has.
	Steps int `json:"steps,omitempty"`
	// Threshold moves the parents whose key is below it, as a decimal
	// uint64. It is fixed when a step starts and never lowered while the
	// candidate lasts.
	Threshold string `json:"threshold,omitempty"`
	// Halted is set by a failed step with onFailure: pause, and cleared by
	// a resume.
	Halted bool `json:"halted,omitempty"`
	// StepStartedAt is when the current step started.
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// StepReadyAt is when the current step's parents were all Ready; its
	// soak counts from then.
	StepReadyAt *metav1.Time `json:"stepReadyAt,omitempty"`
	// ObservedResume is the last spec.resume Loom acted on.
	ObservedResume string `json:"observedResume,omitempty"`
	// FailedParent names the parent whose failure failed the step.
	FailedParent string `json:"failedParent,omitempty"`
	// Message says what the rollout does or why it stopped.
	Message string `json:"message,omitempty"`
	// Parents counts the set's parents.
	Parents ParentCounts `json:"parents"`
}

// ParentCounts counts a set's parents during a rollout.
type ParentCounts struct {
	// Total is how many parents the set has.
	Total int `json:"total"`
	// Moved is how many render the candidate revision.
	Moved int `json:"moved"`
	// Ready is how many of the moved ones are Ready.
	Ready int `json:"ready"`
}

// TemplateRevision keeps the files of one revision of a template set, as
// Loom loaded them, so that parents not yet moved render the stable
// revision after a restart, when the folder holds only the candidate. It
// never changes once created.
type TemplateRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Set is the TemplateSet this revision belongs to.
	Set string `json:"set"`
	// Revision is the content hash of the files.
	Revision string `json:"revision"`
	// Files holds each file of the set, by name, loom.yaml included.
	Files map[string]string `json:"files"`
}
