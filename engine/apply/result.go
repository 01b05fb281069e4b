package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Action is what the apply stage did to one object.
type Action string

// The actions, in the words kubectl uses.
const (
	// Created means the object did not exist and was applied.
	Created Action = "created"
	// Configured means the object existed and was changed.
	Configured Action = "configured"
	// Unchanged means the live object already matched; no request was sent.
	Unchanged Action = "unchanged"
	// Pruned means the object no longer renders and was deleted.
	Pruned Action = "pruned"
	// Failed means the request failed; Result.Err says why.
	Failed Action = "failed"
)

// Ref identifies one object.
type Ref struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// RefOf returns the Ref of an object.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String formats the ref as "Deployment.apps default/web".
func (r Ref) String() string {
	gk := r.GVK.GroupKind().String()
	if r.Namespace == "" {
		return gk + " " + r.Name
	}
	return fmt.Sprintf("%s %s/%s", gk, r.Namespace, r.Name)
}

// Result is the outcome for one object.
type Result struct {
	Ref    Ref
	Action Action
	// Object is the live object after the action: the server's response
	// when a request was sent, the cached object when unchanged, and nil
	// when pruned or failed.
	Object *unstructured.Unstructured
	// Err is set when Action is Failed.
	Err error
	// Drift is set when Action is Configured although the desired object
	// had not changed since Loom applied it: another writer had changed
	// the live object, and this apply reverted it. It is the path of one
	// field that writer changed, such as "spec.replicas".
	Drift string
}

// ChangeSet is the outcome of one apply pass over a parent's children.
type ChangeSet []Result

// Writes counts the results that sent a write request.
func (cs ChangeSet) Writes() int {
	n := 0
	for _, r := range cs {
		if r.Action == Created || r.Action == Configured || r.Action == Pruned {
			n++
		}
	}
	return n
}

// Err returns the first failure, or nil.
func (cs ChangeSet) Err() error {
	for _, r := range cs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
