package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// findings is what one pass learned, sorted by kind of problem. Each list
// holds ready-made messages, in the order the children render.
type findings struct {
	renderErr error
	// rolloutErr says why nothing was rendered: the set's rollout state
	// is unavailable.
	rolloutErr error
	// identityErr says why nothing was rendered: the set's ServiceAccount
	// cannot be acted as.
	identityErr error
	// deleting says why a deleted parent waits (Input.Deleting).
	deleting error
	// suspended says why the parent is suspended (Input.Suspended).
	suspended *object.Suspension
	// unbuilt is set for a suspended parent that Loom never rendered (no
	// children listed, and no Ready condition but this one): it has
	// children, none made.
	unbuilt bool
	// unreachable name each workload cluster that did not answer, with
	// its last error, in name order.
	unreachable []string
	// applyFailures name each failed apply or prune.
	applyFailures []string
	// childFailures name each counted child that kstatus calls Failed.
	childFailures []string
	// waiting names each counted child that is not ready and not failed.
	waiting []string
	// dependencies name each child or file that waits for another child;
	// cycles name each dependency cycle.
	dependencies, cycles []string
	// templateProblems are the status template's failures.
	templateProblems []string
	// counted and ignored count the children that do and do not count
	// toward readiness.
	counted, ignored int
}

// gather sorts the children and results of one pass into findings.
func gather(in Input, kids []child, templateProblems []string) findings {
	f := findings{renderErr: in.RenderErr, rolloutErr: in.RolloutErr, identityErr: in.IdentityErr, deleting: in.Deleting, suspended: in.Suspended, templateProblems: templateProblems, cycles: in.Cycles}
	f.unbuilt = in.Suspended != nil && len(kids) == 0 && neverBuilt(in.Parent)
	for _, w := range in.Waits {
		f.dependencies = append(f.dependencies, w.Message)
	}
	for _, cl := range slices.Sorted(maps.Keys(in.Unreachable)) {
		f.unreachable = append(f.unreachable, fmt.Sprintf("cluster %s does not answer: %s", cl, errText(in.Unreachable[cl])))
	}
	for _, r := range in.Results {
		if failed(r) {
			f.applyFailures = append(f.applyFailures, applyMessage(r))
		}
	}
	for _, c := range kids {
		switch {
		case c.applyErr != nil:
			// Counted in applyFailures, whether ignored or not: the
			// desired state is not in the cluster.
			f.counted++
		case c.dependency:
			f.counted++ // named in dependencies or cycles, or here: an observed child missing
			if notOwned(c.mode) {
				// First: what waits may wait for it.
				f.dependencies = append([]string{c.state.Message}, f.dependencies...)
			}
		case c.state.Ignored:
			f.ignored++
		case c.state.Status == statusFailed:
			f.counted++
			f.childFailures = append(f.childFailures, fmt.Sprintf("%s failed: %s", c, c.state.Message))
		case !c.state.Ready:
			f.counted++
			f.waiting = append(f.waiting, fmt.Sprintf("waiting for %s: %s", c, c.state.Message))
		default:
			f.counted++
		}
	}
	return f
}

// applyMessage names the child and says why applying it failed. A kind the
// API server does not serve is said in plain words: its CRD is missing.
func applyMessage(r object.Result) string {
	name := r.Ref.GroupKind.Kind + " " + r.Ref.Name
	var owned *object.OwnedByAnotherError
	var notAdopted *object.NotAdoptedError
	switch {
	case meta.IsNoMatchError(r.Err):
		return fmt.Sprintf("apply %s: kind %s (%s) is not served by the cluster; is its CRD installed?",
			name, r.Ref.GroupKind.Kind, r.APIVersion)
	case errors.As(r.Err, &owned):
		return owned.Error()
	case errors.As(r.Err, &notAdopted):
		return notAdopted.Error()
	}
	msg := errText(r.Err)
	for _, verb := range []string{"apply", "prune"} {
		// The apply stage already named the object; say it once.
		if rest, ok := strings.CutPrefix(msg, verb+" "+r.Ref.String()+": "); ok {
			return fmt.Sprintf("%s %s: %s", verb, name, rest)
		}
	}
	return fmt.Sprintf("apply %s: %s", name, msg)
}

// ready is True when the templates rendered and every counted child was
// applied and is ready. Its reason is the most severe thing in the way.
func (f findings) ready() metav1.Condition {
	c := metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse}
	if reason, msg, failed := f.failure(); failed {
		c.Reason, c.Message = reason, msg
	} else {
		switch {
		case f.unbuilt:
			c.Reason, c.Message = ReasonSuspendedBeforeCreation, "suspended before Loom made its children; resume it to make them"
		case len(f.dependencies) > 0:
			c.Reason = ReasonWaitingForDependency
		case len(f.waiting) > 0:
			c.Reason = ReasonChildrenNotReady
		default:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonAllChildrenReady, f.allReady()
		}
	}
	if c.Message == "" {
		c.Message = summarize(concat(f.applyFailures, f.childFailures, f.cycles, f.dependencies, f.waiting))
	}
	return c
}

// failure is the most severe failure of one pass, in the one ranking
// Ready and Degraded share (and state, which calls the parent Failed on
// any of them): the parent being deleted, then what stops the render
// (rollout state, ServiceAccount, the render itself), then failed
// applies, failed children and dependency cycles. reason is the reason
// both conditions give; readyMessage is what Ready says of a failure of
// the parent as a whole, or "" when Ready sums up the children. failed is
// false when nothing failed (a status template failure aside, which only
// Degraded reads, below all of these).
func (f findings) failure() (reason, readyMessage string, failed bool) {
	switch {
	case f.deleting != nil:
		return ReasonDeletionBlocked, "being deleted: " + f.deleting.Error(), true
	case f.rolloutErr != nil:
		return ReasonRolloutUnavailable, "cannot tell which template revision to render: " + f.rolloutErr.Error(), true
	case f.identityErr != nil:
		return ReasonServiceAccountUnavailable, "cannot act as the set's ServiceAccount: " + f.identityErr.Error(), true
	case f.renderErr != nil:
		reason = ReasonRenderFailed
		if r, ok := errors.AsType[Reasoned](f.renderErr); ok {
			reason = r.Reason()
		}
		return reason, "cannot render children: " + f.renderErr.Error(), true
	case len(f.unreachable) > 0:
		return ReasonClusterUnreachable, summarize(concat(f.unreachable, f.applyFailures, f.childFailures)), true
	case len(f.applyFailures) > 0:
		return ReasonApplyFailed, "", true
	case len(f.childFailures) > 0:
		return ReasonChildFailed, "", true
	case len(f.cycles) > 0:
		return ReasonDependencyCycle, "", true
	}
	return "", "", false
}

// failed reports whether anything in failure's ranking is present; state
// checks the parent's deletion first, so there it means Failed.
func (f findings) failed() bool {
	_, _, failed := f.failure()
	return failed
}

// allReady is the message when nothing is in the way.
func (f findings) allReady() string {
	var msg string
	switch f.counted {
	case 0:
		msg = "no children to wait for"
	case 1:
		msg = "the only child is ready"
	default:
		msg = fmt.Sprintf("all %d children are ready", f.counted)
	}
	if f.ignored > 0 {
		msg += fmt.Sprintf(" (%d more ignored)", f.ignored)
	}
	return msg
}

// progressing is True while a counted child is still rolling out. It is
// False once everything is ready (Complete), and when nothing can move:
// the templates do not render, or every child not ready has failed.
func (f findings) progressing() metav1.Condition {
	c := metav1.Condition{Type: TypeProgressing, Status: metav1.ConditionFalse}
	switch {
	case f.deleting != nil:
		c.Reason, c.Message = ReasonDeletionBlocked, "the deletion waits: "+f.deleting.Error()
	case f.rolloutErr != nil:
		c.Reason, c.Message = ReasonRolloutUnavailable, "nothing is rolled out while the set's rollout state is unavailable"
	case f.identityErr != nil:
		c.Reason, c.Message = ReasonServiceAccountUnavailable, "nothing is rolled out while the set's ServiceAccount is unavailable"
	case f.renderErr != nil:
		c.Reason, c.Message = ReasonRenderFailed, "nothing is rolled out while the templates fail to render"
	case len(f.unreachable) > 0:
		c.Reason, c.Message = ReasonClusterUnreachable, "nothing is rolled out to a cluster that does not answer: "+summarize(f.unreachable)
	case len(f.dependencies) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonWaitingForDependency, summarize(concat(f.dependencies, f.waiting))
	case len(f.waiting) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonChildrenProgressing, summarize(f.waiting)
	case len(f.cycles) > 0:
		c.Reason, c.Message = ReasonDependencyCycle, summarize(f.cycles)
	case len(f.applyFailures) > 0:
		c.Reason, c.Message = ReasonApplyFailed, summarize(concat(f.applyFailures, f.childFailures))
	case len(f.childFailures) > 0:
		c.Reason, c.Message = ReasonChildFailed, summarize(f.childFailures)
	default:
		c.Reason, c.Message = ReasonComplete, f.allReady()
	}
	return c
}

// degraded is True when anything failed. The reason is the most severe
// failure (render, apply, child, status template); the message is that
// failure's, with the count of the others.
func (f findings) degraded() metav1.Condition {
	c := metav1.Condition{Type: TypeDegraded, Status: metav1.ConditionTrue}
	var msgs []string
	if f.deleting != nil {
		msgs = append(msgs, f.deleting.Error())
	}
	if f.rolloutErr != nil {
		msgs = append(msgs, f.rolloutErr.Error())
	}
	if f.identityErr != nil {
		msgs = append(msgs, f.identityErr.Error())
	}
	if f.renderErr != nil {
		msgs = append(msgs, f.renderErr.Error())
	}
	msgs = concat(msgs, f.unreachable, f.applyFailures, f.childFailures, f.cycles, f.templateProblems)
	if reason, _, failed := f.failure(); failed {
		c.Reason = reason
	} else if len(f.templateProblems) > 0 {
		c.Reason = ReasonStatusTemplateFailed
	} else {
		c.Status, c.Reason, msgs = metav1.ConditionFalse, ReasonAsExpected, []string{"no failures"}
	}
	c.Message = summarize(msgs)
	return c
}

// state is the one-word summary. A status template failure alone does not
// make the parent Failed: its children, the workload, are fine, and
// Degraded says what is wrong.
func (f findings) state(ready metav1.Condition) string {
	switch {
	case f.deleting != nil:
		return StateDeleting
	case f.suspended != nil:
		return StateSuspended
	case f.failed():
		return StateFailed
	case ready.Status == metav1.ConditionTrue:
		return StateReady
	default:
		return StateBuilding
	}
}

// suspended is the Suspended condition of a suspended parent.
func suspended(s *object.Suspension) metav1.Condition {
	return metav1.Condition{Type: TypeSuspended, Status: metav1.ConditionTrue, Reason: s.Reason, Message: s.Message}
}

// setConditions applies the new conditions over the parent's previous ones
// with meta.SetStatusCondition semantics: lastTransitionTime becomes now
// only when a condition's status changes. It returns Loom's conditions, in
// the order given, as status.conditions entries.
func setConditions(parent *unstructured.Unstructured, gen int64, stamp time.Time, next ...metav1.Condition) []any {
	conds := previousConditions(parent)
	now := metav1.NewTime(stamp)
	out := make([]any, 0, len(next))
	for _, c := range next {
		c.ObservedGeneration = gen
		c.Message = truncate(c.Message, maxConditionMessage)
		c.LastTransitionTime = now
		meta.SetStatusCondition(&conds, c)
		got := meta.FindStatusCondition(conds, c.Type)
		if got.LastTransitionTime.IsZero() {
			got.LastTransitionTime = now
		}
		out = append(out, conditionMap(*got))
	}
	return out
}

// previousConditions decodes the parent's status.conditions.
func previousConditions(parent *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", fieldConditions)
	return decodeConditions(raw)
}

// decodeConditions decodes a status.conditions list, skipping any entry
// that is not a condition.
func decodeConditions(raw any) []metav1.Condition {
	items, _ := raw.([]any)
	conds := make([]metav1.Condition, 0, len(items))
	for _, item := range items {
		var c metav1.Condition
		if b, err := json.Marshal(item); err != nil || json.Unmarshal(b, &c) != nil || c.Type == "" {
			continue
		}
		conds = append(conds, c)
	}
	return conds
}

// conditionMap is a condition in its JSON form; lastTransitionTime is
// RFC 3339 in UTC, to the second, as metav1.Time encodes it.
func conditionMap(c metav1.Condition) map[string]any {
	return map[string]any{
		"type":               c.Type,
		"status":             string(c.Status),
		"reason":             c.Reason,
		"message":            c.Message,
		"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
		"observedGeneration": c.ObservedGeneration,
	}
}

// summarize is the first message, with the count of the others.
func summarize(msgs []string) string {
	switch len(msgs) {
	case 0:
		return ""
	case 1:
		return msgs[0]
	default:
		return fmt.Sprintf("%s (and %d more)", msgs[0], len(msgs)-1)
	}
}

// concat joins lists into a new one.
func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// neverBuilt reports whether Loom never reconciled parent past a
// suspension: it has no Ready condition, or only the one that says so.
func neverBuilt(parent *unstructured.Unstructured) bool {
	if parent == nil {
		return true
	}
	ready := meta.FindStatusCondition(previousConditions(parent), TypeReady)
	return ready == nil || ready.Reason == ReasonSuspendedBeforeCreation
}
