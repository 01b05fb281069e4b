// Package config is a template set's configuration: the types of what
// loom.yaml says (the parent kind, readiness rules, lookups, the status
// template and the rollout policy), how it is decoded (strictly: an
// unknown field is an error) and validated, and the defaults each field
// takes when it is left out.
//
// It is a leaf package, like kro's api/v1alpha1: it imports no client and
// no other stage, so every stage (render, status, depend, rollout) and the
// controller read one definition of the set. loom.yaml will grow (the
// parent's schema, charts, cluster-scoped kinds, identities); each new
// block gets its type and its validation here.
package config
