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
//	parent ──► template data (.Parent, .Spec, .Name, …, and .Clusters: the
//	           workload clusters the set may use, placement.Clusters)
//	       ──► text/template + sprig, one file at a time
//	       ──► YAML documents split on "---" (yamldoc.Split)
//	       ──► decoded objects (yamldoc.Decode; cached by content)
//	       ──► validation (required fields, names, strict decode of built-in kinds,
//	           a kind the templates name: ScanKinds, kinds.go)
//	       ──► injection (namespace, controller ownerReference, ApplySet labels)
//	       ──► placement (a child's loom.dev/cluster names a registered cluster
//	           the set may use: engine/render/placement)
//	       ──► a stably ordered []*unstructured.Unstructured
//
// Decoding and validation have fast paths for what templates usually
// produce. yamldoc.DecodeFast reads the plain block YAML that templates
// write and leaves any other document to yaml.v2; a built-in kind's cached
// shape (shape.go) accepts a valid object without the JSON round trip of
// strict decoding, which still decides, and words the error, for anything
// else.
// Fuzz tests hold each fast path to the result of its slow one.
//
// Rendering is hermetic: the same set and parent give the same objects.
// Sprig's functions that read the environment or the network are removed,
// and those whose value differs on every render (the clock, random values,
// salts, keys and certificates; hermetic.Refused, engine/render/hermetic) make Load
// refuse the set, naming the file and line of the first call. The
// controller re-renders a parent on every child event, so a child that
// changed with each render would be rewritten in a loop. A chart set is
// rendered as Helm renders it instead: its random functions take their
// values from the parent's seed (Seeder), its keys, certificates and
// salted hashes are the values kept with the seed (Seed.Kept; a render
// returns new ones in Output.Generated for the caller to keep), and a
// call of the clock fails the render where it runs.
//
// A set whose loom.yaml has a schema is checked against it when it loads
// (engine/render/schemacheck): every path into .Spec that a template reads,
// through field chains, variables, index/get/hasKey/dig with constant keys,
// with, range and the defines that include and template call, must be one
// the spec's schema can hold. Each path it cannot hold is an *Error at its
// file and line, and the set does not load. Where the type is not known (a
// function's result, a free-form part of the schema) nothing is checked.
//
// What a parent's author writes is data, not template: text from the spec
// that tpl runs may not call lookup unless loom.yaml's specLookups says so
// (lookup.go), and a child whose kind no template names, which can only
// have come from the spec, is refused (checkKind).
//
// A set whose loom.yaml serves several versions of the parent has a
// Converter (engine/render/convert), built at load: a move whose path a
// version's schema lacks, or a conversion template that does not parse,
// fails the load at its line. Conversion templates are parsed with the
// set's other templates, but render no child; they run under the same
// deadline, with lookups refused.
//
// Every error is an *Error that names the template file, the line, and the
// document index, so that it can be fixed without reading Loom's source;
// in a chart set, the file is the one in the set's folder (onDisk), not
// Helm's name for it.
package render
