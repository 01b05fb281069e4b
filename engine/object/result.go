package object

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
	// Orphaned means the object is to be kept (AnnotationDeletePolicy
	// orphan) and no longer renders, or its parent is being deleted: Loom
	// released it instead of deleting it. It lost Loom's ownerReference,
	// labels and field manager; its spec is as it was.
	Orphaned Action = "orphaned"
	// Failed means the request failed; Result.Err says why.
	Failed Action = "failed"
)

// Ref identifies one object by group, kind, namespace and name, and the
// workload cluster it is placed in. The version is left out on purpose:
// one object served at two versions (an autoscaling/v1 and an
// autoscaling/v2 HorizontalPodAutoscaler) is one object, as in cli-utils'
// ObjMetadata. Two clusters may each hold an object of the same kind,
// namespace and name: they are two objects.
type Ref struct {
	GroupKind schema.GroupKind
	Namespace string
	Name      string
	// Cluster is the registered workload cluster the object is placed in
	// (TargetCluster), "" for the cluster Loom runs in.
	Cluster string
}

// RefOf returns the Ref of an object, in the cluster its AnnotationCluster
// names (rendered children carry it, and so do the objects applied from
// them).
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{GroupKind: obj.GroupVersionKind().GroupKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Cluster: TargetCluster(obj)}
}

// String formats the ref as "Deployment.apps default/web", followed by
// " in cluster eu-1" for an object in a workload cluster.
func (r Ref) String() string {
	gk := r.GroupKind.String()
	s := gk + " " + r.Name
	if r.Namespace != "" {
		s = fmt.Sprintf("%s %s/%s", gk, r.Namespace, r.Name)
	}
	if r.Cluster != "" {
		s += " in cluster " + r.Cluster
	}
	return s
}

// Result is the outcome for one object.
type Result struct {
	Ref Ref
	// APIVersion is the version the object was rendered (and applied) at,
	// or read at when it was pruned or orphaned.
	APIVersion string
	Action     Action
	// Object is the live object after the action: the server's response
	// when a request was sent, the cached object when unchanged, and nil
	// when pruned or failed, and the released object when orphaned.
	Object *unstructured.Unstructured
	// Err is set when Action is Failed.
	Err error
	// Drift is set when Action is Configured although the desired object
	// had not changed since Loom applied it: another writer had taken over
	// or removed fields Loom sets, and this apply took them back. It names
	// those fields, such as "spec.replicas", or holds only DriftUnrecorded.
	Drift []string
	// Drifted is set when Action is Unchanged because the child's drift
	// mode is DriftWarn: another writer changed or removed the fields it
	// names, such as "spec.replicas", and Loom left them as they are. It
	// holds DriftUnnamed when the fields cannot be named.
	Drifted []string
}

// DriftUnnamed stands for drifted fields Loom cannot name: the API server
// publishes no schema of the child's kind to compute them from.
const DriftUnnamed = "some of its fields (which ones is not known: the API server publishes no schema of its kind)"

// DriftUnrecorded stands for the fields taken back when Loom cannot name
// them: the first apply after a restart, when Loom has no record of its
// last apply and read only a fingerprint of the fields it owned.
const DriftUnrecorded = "some of its fields (which ones is not known: Loom restarted since it last applied it)"

// ChangeSet is the outcome of one apply pass over a parent's children.
type ChangeSet []Result

// Writes counts the results that sent a write request.
func (cs ChangeSet) Writes() int {
	n := 0
	for _, r := range cs {
		if r.Action == Created || r.Action == Configured || r.Action == Pruned || r.Action == Orphaned {
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
