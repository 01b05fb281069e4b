// Package docs holds Loom's guide (tutorials, how-to guides, reference,
// explanation and runbooks) as Markdown, and the test that keeps it
// navigable: every relative link of README.md and of docs/**/*.md must
// name a file that exists and, when it has a #fragment, a heading of that
// file, by GitHub's heading-anchor rules.
//
// The CLI reference under docs/reference/cli is generated from the cobra
// commands; cmd/loom's TestCLIReferenceIsCurrent fails when it is stale
// (go test ./cmd/loom -run TestCLIReferenceIsCurrent -update rewrites it).
package docs
