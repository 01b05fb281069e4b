package object

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// AnnotationCluster, written on a child in its template, names the
// registered workload cluster the child is placed in; a child without it
// goes to the cluster Loom runs in. Its key is the label that registers a
// cluster (engine/cluster.LabelCluster), and its value the registered
// name. The render refuses a child aimed at a cluster its set may not use
// (loom.yaml's clusters) or that no Secret registers, so a child that
// rendered names a cluster its set may use.
const AnnotationCluster = "loom.dev/cluster"

// TargetCluster is the cluster a rendered child is placed in: its
// AnnotationCluster, or "" for the cluster Loom runs in. The controller,
// prune and diff read a child's cluster through it, so that they agree.
func TargetCluster(child *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(child.Object, "metadata", "annotations", AnnotationCluster)
	return v
}
