// Package clusteradmin is what `loom cluster add|list|remove` do with the
// registrations of workload clusters: the Secrets in Loom's namespace of
// the management cluster that engine/cluster reads.
//
// Data flows one way, from a kubeconfig file to a Secret and from Secrets
// to rows:
//   - add: Kubeconfig minifies and flattens the file's context into the
//     kubeconfig a registration holds; NewRegistration turns it into the
//     Secret (cluster.NewSecret) and refuses what Loom would refuse
//     (cluster.RESTConfig, with its message); Apply checks that the Secret
//     may be written (it is that cluster's, and the name is not
//     registered by another) and server-side applies it; Redact is the
//     kubeconfig a dry run shows.
//   - list: Secrets lists the candidates, List reads them as Loom's
//     controller does (cluster.FromSecret, cluster.Index), and ProbeAll
//     asks each usable cluster for its version, all at once, each within
//     its own deadline (Prober).
//   - remove: Remove deletes a Loom registration and refuses Cluster
//     API's.
//
// It reaches the management cluster only through the Secrets client it
// is handed, and a registered cluster only in Prober.Probe.
package clusteradmin
