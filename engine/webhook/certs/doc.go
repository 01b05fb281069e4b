// Package certs keeps the conversion webhook's TLS certificates: Loom's
// own CA and a serving certificate it signs, held in a Secret in Loom's
// namespace (loom-webhook-tls), rotated before they expire, and the CA
// bundle injected into the CRDs whose conversion webhook Loom serves.
//
// # The decisions, pure
//
// Plan says, from the time, the Secret's State and whether the newest CA
// is in every CRD's caBundle, what to do next: Create (no usable CA), Drop
// (an old CA expired), AddCA (the CA is 2/3 through its life: a new one
// joins the bundle and signs from now on), Reissue (the serving
// certificate is 2/3 through its life, names other hosts, or may move to
// a new CA that every CRD trusts since Lifetimes.Propagation), or None
// with the time to ask again. Do carries an action out. Neither reads a
// clock or a client, and TestRotationNeverServesUntrusted runs them for
// five CA lifetimes to show that no certificate served is ever one the API
// server does not trust:
//
//   - a new CA is in the bundle before a serving certificate it signed
//     is made, and has been in every CRD for Propagation;
//   - an old CA stays in the bundle until its NotAfter, and no serving
//     certificate outlives the CA that signed it.
//
// # The loop
//
// Rotator runs on every replica, on the same Secret: each pass reads it,
// injects its CAs (Injector), and writes at most one step of Plan, by a
// create or an update at the resourceVersion read, so that replicas never
// write over each other; a lost race reads again. Every replica serves
// what the Secret holds (Certificate, for tls.Config.GetCertificate), so
// a rotation needs no restart. The Injector merges the Secret's CAs with
// the CRD's own still valid ones (MergeBundle): a replica that read an
// older Secret can never take a newer CA out of a CRD.
//
// # Why not a library's rotator
//
// The issue asked for a well-kept library, such as the certificate
// rotator of Gatekeeper (github.com/open-policy-agent/cert-controller).
// That rotator runs inside a controller-runtime manager, with its cache
// and client, which Loom does not have: adding one would add a second
// informer stack and its memory to every replica, against Loom's idle
// memory budget. So the parts are Kubernetes' own (k8s.io/client-go's
// util/cert and util/keyutil for PEM, crypto/x509 for signing, the
// Secret's resourceVersion for agreement between replicas) and this
// package writes only the loop and its decisions, which are pure and
// tested as such. With cert-manager (the chart's webhook.certManager),
// Loom serves the certificate cert-manager writes (Files) and neither
// rotates nor injects: cert-manager's cainjector does.
package certs
