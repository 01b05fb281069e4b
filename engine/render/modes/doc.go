// Package modes checks how much of each child Loom manages (its
// loom.dev/manage annotation, object.AnnotationManage, or loom.yaml's
// manage default) where a set's templates say it: in the templates' text
// when the set loads (Scan: a literal value that is not a mode, and an
// observed child whose template sets fields), and on each rendered child
// (Of, Observed), where a computed value is caught.
//
// A rendered child leaves with its mode written in its annotation when it
// is not full (the default), so that every later stage (apply, status,
// loom diff, loom render -o) reads the mode from the child alone; a full
// child is left as it was, so its hash does not change.
package modes
