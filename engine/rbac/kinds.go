package rbac

import "github.com/loom-operator/loom/engine/render/kinds"

// Kind is a kind that a set's templates render, and the place where a
// template names it (kinds.Kind).
type Kind = kinds.Kind

// ComputedError is a document whose kind, or whose apiVersion for a kind
// that is not built into Kubernetes, comes out of a template action
// (kinds.ComputedError). render.Load refuses such a set, so every command
// does; FromSet scans again only the sets it is given.
type ComputedError = kinds.ComputedError
