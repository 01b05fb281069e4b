// Package cluster is the vocabulary of workload clusters: which clusters
// are registered (a Registration, read from a Secret by FromSecret), how to
// reach one (RESTConfig, which turns a registration's kubeconfig into a
// *rest.Config and refuses what it must not run), and which of them a set
// may place children in (Select).
//
// It is pure: it reads Secrets it is handed and never a cluster, so it is
// tested with no cluster at all. Data flows one way: the controller's
// registry informer hands Secrets in Loom's namespace to FromSecret, the
// set's allowed clusters come from Select, and each cluster a parent
// targets gets the clients RESTConfig's answer builds (its own child cache
// and applier). Index puts the registrations by name and leaves out a name
// two Secrets claim. NewSecret is FromSecret the other way round: the
// Secret of a Loom registration, as `loom cluster add` writes it.
//
// A cluster is registered in one of two ways, both Secrets in Loom's
// namespace (a Secret elsewhere registers nothing, so a tenant cannot
// register a cluster by labelling a Secret in its own namespace):
//
//   - a Loom registration: label LabelCluster ("loom.dev/cluster") set to
//     the cluster's name, the kubeconfig under key KeyKubeconfig
//     ("kubeconfig");
//   - a Cluster API kubeconfig Secret, as Cluster API writes it: named
//     "<cluster>-kubeconfig", of type SecretTypeClusterAPI, labelled
//     LabelClusterAPIName with the cluster's name, the kubeconfig under key
//     KeyClusterAPIKubeconfig ("value"). A Cluster created in Loom's
//     namespace needs no extra step.
package cluster
