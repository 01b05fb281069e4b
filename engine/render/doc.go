// Package render is the first stage of Loom's pipeline: it turns a parent
// object into the child objects its template set describes.
//
// A template set is one folder (see Load). It is parsed once, when loaded;
// rendering a parent afterwards does no I/O and touches no shared state
// beyond an internal decode cache, so Render is safe for concurrent use and
// is a pure function of (set, parent).
//
// Data flows one way:
//
//	parent ──► template data (.Parent, .Spec, .Name, …)
//	       ──► text/template + sprig, one file at a time
//	       ──► YAML documents split on "---"
//	       ──► decoded objects (cached by content)
//	       ──► validation (required fields, names, strict decode of built-in kinds)
//	       ──► injection (namespace, controller ownerReference, ApplySet labels)
//	       ──► a stably ordered []*unstructured.Unstructured
//
// Every error is an *Error that names the template file, the line, and the
// document index, so that it can be fixed without reading Loom's source.
package render
