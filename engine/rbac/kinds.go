package rbac

import "github.com/loom-operator/loom/engine/render"

// Kind is a kind that a set's templates render, and the place where a
// template names it (render.Kind: render refuses a child of a kind no
// template names).
type Kind = render.Kind

// ComputedError is a document whose kind is computed (render.ComputedError).
type ComputedError = render.ComputedError

// ScanKinds returns the kinds the templates name (render.ScanKinds).
func ScanKinds(texts map[string][]byte) ([]Kind, error) { return render.ScanKinds(texts) }
