package rbac

import "github.com/loom-operator/loom/engine/render"

// Kind is a kind that a set's templates render, and the place where a
// template names it (render.Kind).
type Kind = render.Kind

// ComputedError is a document whose kind, or whose apiVersion for a kind
// that is not built into Kubernetes, comes out of a template action
// (render.ComputedError). render.Load refuses such a set, so every command
// does; FromSet scans again only the sets it is given.
type ComputedError = render.ComputedError

// ScanKinds returns the kinds named at the top level of every YAML
// document in texts (render.ScanKinds).
func ScanKinds(texts map[string][]byte) ([]Kind, error) { return render.ScanKinds(texts) }
