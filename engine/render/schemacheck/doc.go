// Package schemacheck checks a template set's reads of the parent's spec
// against the spec's schema, once, when the set loads.
//
// Data flows one way:
//
//	Templates (the parsed trees, their files, the status template, texts)
//	  + the spec's schema
//	  ──► a walk of each template that follows the type of dot and of each
//	      variable through field chains, index/get/hasKey/dig with constant
//	      keys, default, with, range, and the defines include and template call
//	  ──► a Problem (file, line, message) for each .Spec path the schema
//	      cannot hold, each once, sorted by file and line
//
// Where a value's type is not known (a function's result, a variable
// assigned with =, a free-form part of the schema) the walk stops: it
// reports nothing it is not sure of. engine/render turns each Problem
// into an *Error, so that the set does not load.
package schemacheck
