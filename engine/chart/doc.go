// Package chart renders an unmodified Helm chart the way Helm 4's SDK
// does, for a template set whose loom.yaml names a chart (chart: PATH).
//
// What decides values, dependencies and schemas is Helm's own code:
// the chart is loaded by Helm's loader, subcharts are enabled, aliased
// and their values imported by ProcessDependencies, and the values are
// coalesced and checked against values.schema.json by
// ToRenderValuesWithSchemaValidation, on every render, because conditions
// and tags depend on the values.
//
// What executes the templates is Loom's: Helm's engine parses every
// template of the chart on every render; this package parses them once
// per shape (the set of template files that the enabled subcharts make)
// and keeps a pool of clones per shape, so a render only executes. The
// data each template sees (.Values scoped to its chart, .Chart, .Release,
// .Capabilities, .Files, .Subcharts, .Template), the order in which files
// are parsed (which define wins) and executed, the function map and the
// treatment of missing keys are Helm's; the differential test holds them
// to Helm's engine.Render on charts written for the purpose.
//
// Functions whose value differs on every render are made stable per
// render input: the random ones are drawn from Env.Seed (random.go), and
// those that make keys, certificates and salted hashes return the value
// kept in Env.Kept for the same call and inputs, or make one and return
// it in Result.Generated for the caller to keep (kept.go).
//
// What it keeps between renders (parsed tpl texts, prepared values,
// shapes, outputs) is bounded in bytes: values are parents' specs. A
// lookup made by tpl text that is not the chart's own is marked
// (Position.FromSpec) for the caller to refuse. Errors name templates as
// Helm does (web/charts/db/templates/x.yaml); DiskPath maps such a name
// to the file Load read.
//
// RenderContext stops a render when its context ends, at the loop that
// was running (deadline.go): every parsed tree is guarded by package
// deadline, and the writers the templates execute into check the context.
// A stopped render is never kept.
//
// The package knows nothing of Loom's children: Render returns each
// file's text, and the render stage splits, decodes and validates it.
package chart
