// Package clusters is the controller's room for workload clusters (issue
// 34): the registry of the clusters registered in Loom's namespace, and
// each target cluster's clients, child cache and applier.
//
// The registry (Registry) watches the Secrets of Loom's namespace that
// register a cluster (cluster.LabelCluster, and Cluster API's kubeconfig
// Secrets, by their type), reads them with engine/cluster, and hands the
// registrations to every render (pipeline.Options.Clusters). A change of a
// registration calls back with the registrations that changed, so that the
// controller re-reconciles the parents of the sets that may use them
// (Change.Affects). It starts the first time a render asks for the registrations,
// so that a Loom whose sets place nothing in other clusters never reads a
// Secret of its namespace.
//
// Data flows one way: Secrets → cluster.FromSecret → Registrations → the
// render; a cluster's registration → cluster.RESTConfig → its clients.
package clusters
