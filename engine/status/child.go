package status

import (
	"fmt"

	"github.com/loom-operator/loom/engine/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// The kstatus statuses, as the strings status.children[].status holds.
const (
	statusCurrent     = string(kstatus.CurrentStatus)
	statusInProgress  = string(kstatus.InProgressStatus)
	statusFailed      = string(kstatus.FailedStatus)
	statusTerminating = string(kstatus.TerminatingStatus)
	statusNotFound    = string(kstatus.NotFoundStatus)
	statusUnknown     = string(kstatus.UnknownStatus)
)

// ignoredPrefix starts the message of a child that a rule ignores.
const ignoredPrefix = "ignored: "

// ChildStatus returns the readiness of one live child. It asks kstatus,
// which knows the built-in workloads and any kind that follows the
// observedGeneration and Ready-condition conventions, unless a readiness
// rule from loom.yaml matches the child:
//
//   - Condition X: the child is ready when condition X is True and, when the
//     child reports status.observedGeneration, it has observed its latest
//     metadata.generation.
//   - FailedCondition Y: the child is Failed when condition Y is True.
//   - Ignore: the child is judged as usual but marked Ignored, so the parent
//     does not wait for it.
//
// A nil obj is a child that is not in the cache yet: NotFound. A child being
// deleted is Terminating, whatever the rules say. When several rules match,
// the most specific wins (Name before APIVersion before Kind alone), then
// the first. ChildStatus reads nothing but its arguments.
func ChildStatus(obj *unstructured.Unstructured, rules []config.ReadinessRule) ChildState {
	if obj == nil {
		return stateOf("", "", "", nil, rules)
	}
	return stateOf(obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), obj, rules)
}

// stateOf judges a child named by apiVersion, kind and name, whose live
// object may be nil. Rules match on the name, so that a child that is not
// found yet can still be ignored.
func stateOf(apiVersion, kind, name string, obj *unstructured.Unstructured, rules []config.ReadinessRule) ChildState {
	rule := matchRule(apiVersion, kind, name, rules)
	var st ChildState
	if obj == nil {
		st = ChildState{Status: statusNotFound, Message: "not found yet"}
	} else {
		st = evaluate(obj, rule)
	}
	st.Ready = st.Status == statusCurrent
	if rule != nil && rule.Ignore {
		st.Ignored = true
		st.Message = ignoredPrefix + st.Message
	}
	return st
}

// evaluate judges a live object under rule, which may be nil.
func evaluate(obj *unstructured.Unstructured, rule *config.ReadinessRule) ChildState {
	if obj.GetDeletionTimestamp() != nil {
		return ChildState{Status: statusTerminating, Message: "being deleted"}
	}
	var st ChildState
	if rule != nil && rule.Condition != "" {
		st = byCondition(obj, rule.Condition)
	} else {
		st = byKstatus(obj)
	}
	if rule != nil && rule.FailedCondition != "" {
		if c, ok := findCondition(obj, rule.FailedCondition); ok && c.status == "True" {
			st = ChildState{Status: statusFailed, Message: c.describe()}
		}
	}
	return st
}

// byKstatus asks kstatus. A Failed result carries the Stalled condition that
// says why (for a Deployment, the Progressing condition's message); it is
// added to kstatus's summary.
func byKstatus(obj *unstructured.Unstructured) ChildState {
	res, err := kstatus.Compute(obj)
	if err != nil {
		return ChildState{Status: statusUnknown, Message: fmt.Sprintf("cannot compute status: %v", err)}
	}
	st := ChildState{Status: string(res.Status), Message: res.Message}
	if res.Status == kstatus.FailedStatus {
		for _, c := range res.Conditions {
			if c.Type == kstatus.ConditionStalled && c.Message != "" && c.Message != res.Message {
				st.Message += ": " + c.Message
			}
		}
	}
	return st
}

// byCondition implements a rule's Condition: ready when that condition is
// True and the latest generation has been observed.
func byCondition(obj *unstructured.Unstructured, condType string) ChildState {
	gen, hasGen := intField(obj.Object, "metadata", "generation")
	observed, hasObserved := intField(obj.Object, "status", "observedGeneration")
	if hasGen && hasObserved && observed < gen {
		return ChildState{Status: statusInProgress, Message: fmt.Sprintf(
			"%s generation is %d, but latest observed generation is %d", obj.GetKind(), gen, observed)}
	}
	c, ok := findCondition(obj, condType)
	switch {
	case !ok:
		return ChildState{Status: statusInProgress, Message: fmt.Sprintf("condition %s not reported yet", condType)}
	case c.status == "True":
		return ChildState{Status: statusCurrent, Message: c.describe()}
	default:
		return ChildState{Status: statusInProgress, Message: c.describe()}
	}
}

// matchRule returns the most specific rule matching the child, or nil.
func matchRule(apiVersion, kind, name string, rules []config.ReadinessRule) *config.ReadinessRule {
	var best *config.ReadinessRule
	bestScore := -1
	for i := range rules {
		r := &rules[i]
		if r.Kind != kind || (r.APIVersion != "" && r.APIVersion != apiVersion) || (r.Name != "" && r.Name != name) {
			continue
		}
		score := 0
		if r.Name != "" {
			score += 2
		}
		if r.APIVersion != "" {
			score++
		}
		if score > bestScore {
			best, bestScore = r, score
		}
	}
	return best
}

// condition is the part of a status condition that readiness rules read.
type condition struct {
	typ, status, reason, message string
}

// describe formats the condition for a message:
// "condition Failed is True (BackoffLimitExceeded: Job has reached the specified backoff limit)".
func (c condition) describe() string {
	s := fmt.Sprintf("condition %s is %s", c.typ, c.status)
	switch {
	case c.reason != "" && c.message != "":
		s += fmt.Sprintf(" (%s: %s)", c.reason, c.message)
	case c.reason != "" || c.message != "":
		s += fmt.Sprintf(" (%s%s)", c.reason, c.message)
	}
	return s
}

// findCondition finds the condition of type typ in status.conditions.
func findCondition(obj *unstructured.Unstructured, typ string) (condition, bool) {
	list, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "conditions")
	items, _ := list.([]any)
	for _, item := range items {
		m, _ := item.(map[string]any)
		if t, _ := m["type"].(string); t != typ {
			continue
		}
		c := condition{typ: typ}
		c.status, _ = m["status"].(string)
		c.reason, _ = m["reason"].(string)
		c.message, _ = m["message"].(string)
		return c, true
	}
	return condition{}, false
}

// intField reads an integer field, whichever number type the decoder chose.
func intField(obj map[string]any, fields ...string) (int64, bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !found {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}
