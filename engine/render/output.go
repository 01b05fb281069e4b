package render

import (
	"github.com/loom-operator/loom/engine/hook"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Output is what one render made and read.
type Output struct {
	// Children are the rendered children, validated, with the parent's
	// namespace, a controller ownerReference and the ApplySet labels
	// injected, in a fixed order (dependencies first, then by kind and
	// name).
	Children []*unstructured.Unstructured
	// Reads holds, for each child, the lookups made while its document
	// was written (a lookup belongs to the document the file was writing).
	Reads [][]Read
	// Deferred are the files that failed after looking up one of the
	// children this parent renders. Such a file usually fails because
	// that child does not exist yet (a `required` on a field the API
	// server fills in): whether it waits or has really failed depends on
	// the child's readiness, which the caller judges. Its children are
	// unknown, so nothing of this parent may be pruned.
	Deferred []Deferred
	// All is every lookup made, in the order made, for the caller to
	// watch what the render read.
	All []Read
	// Release is a chart set's release: its revision, install or
	// upgrade, and the digest of what it renders (nil for other sets).
	Release *hook.Release
	// Hooks are the chart's hooks among Children, each once, for the
	// controller to run by hook.Decide.
	Hooks []Hook
	// Notes is a chart set's rendered NOTES.txt (the root chart's), when
	// loom.yaml asks for it (notes: true).
	Notes string
	// Sources holds, for each child, the template file it was rendered
	// from: a file of the set, or a chart's template path as helm
	// template's `# Source:` comments name it (web/templates/svc.yaml).
	Sources []string
	// Generated are the values a chart's generating functions (keys,
	// certificates, salted hashes: chart.GeneratedFuncs) returned, by
	// key: those the Seeder kept (Seed.Kept) and those made in this
	// render, which the caller must keep (in the parent's seed Secret)
	// before it applies children that hold them.
	Generated map[string]string
}

// Deferred is a file whose render failed after it looked up one of the
// parent's own rendered children.
type Deferred struct {
	// File is the template file.
	File string
	// Err is its render error, an *Error.
	Err error
	// Reads are the file's lookups.
	Reads []Read
}
