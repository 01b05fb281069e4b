// Package status is the third stage of Loom's pipeline: it maps the live
// state of a parent's children back into the parent's status.
//
// Compute is a pure function of an Input: the parent as last read, what the
// render and apply stages returned, the live children, the set's readiness
// rules and the status template's fields. It fetches nothing and reads no
// clock but Input.Now, so it is tested with no cluster at all. Equal tells
// the controller whether the result differs from the live status, so that
// status is written only when it changed.
//
// Data flows one way:
//
//	rendered children + apply ChangeSet + live objects
//	    ──► ChildStatus per child (kstatus, or a loom.yaml readiness rule)
//	    ──► findings: render error, apply failures, failed children,
//	        children still rolling out, status template problems
//	    ──► Ready, Progressing, Degraded (meta.SetStatusCondition over the
//	        parent's previous conditions) and state
//	    ──► status map: observedGeneration, conditions, state, children,
//	        plus the status template's fields
//
// # Conditions
//
// All three conditions are always present, each with the parent's
// generation as observedGeneration. lastTransitionTime changes only when a
// condition's status does; a new reason or message keeps it.
//
//   - Ready is True when the templates rendered and every counted child was
//     applied and is ready (kstatus Current).
//   - Progressing is True while a counted child is InProgress, NotFound (just
//     applied, not in the cache yet), Terminating or Unknown. It is False
//     with reason Complete once everything is ready.
//   - Degraded is True when anything failed. The reason is the most severe
//     failure: RolloutUnavailable, then RenderFailed, then ApplyFailed,
//     then ChildFailed, then StatusTemplateFailed; the message is that
//     failure's, with the count of the others.
//
// status.state is Failed when rendering, applying or a child failed, Ready
// when Ready is True, and Building otherwise.
//
// # Decisions
//
// Ignored children (a readiness rule with ignore: true) are still listed in
// status.children. Their ready and status fields tell their own state, and
// their message starts with "ignored: ", but they count toward neither
// Ready, Progressing nor Degraded. A failed apply of an ignored child still
// counts: ignore is about readiness, and the desired state is not in the
// cluster. So does any failed apply result, a failed prune included.
//
// A status template failure, or a status template that sets a field Loom
// owns (observedGeneration, conditions, state, children), makes Degraded
// True with reason StatusTemplateFailed. It degrades only the status: Ready
// is still computed from the children, and state does not become Failed,
// since the workload is fine. On a failure no extra field is written; a
// reserved field is dropped and the others are kept.
//
// A render error means the desired state cannot be computed: Ready and
// Progressing are False and Degraded is True, all with reason RenderFailed,
// and the Degraded message is the render error, which names file and line.
// Nothing was applied or pruned, so status.children keeps the parent's
// previous list; an entry whose live object the caller supplies in
// Input.Live is judged afresh, the others keep their last values.
//
// RolloutErr is the same with reason RolloutUnavailable: the set has a
// rollout policy but its rollout state cannot be read, so which template
// revision the parent renders is unknown and nothing was rendered.
package status
