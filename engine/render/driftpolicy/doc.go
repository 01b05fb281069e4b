// Package driftpolicy checks a rendered child's drift annotations
// (object.AnnotationDrift, object.AnnotationDriftIgnore) and writes the
// set's defaults, loom.yaml's drift, into them, so that the child says
// its own drift mode: the apply stage reads only the child, and `loom
// render -o` and the live object show what Loom does with its drift. It is
// pure: a rendered object in, the same object (annotated) or an error out.
package driftpolicy
