// Package pipeline chains the stages that turn one parent into its plan:
// render (engine/render: the templates, with lookups answered by a reader
// the caller hands in) and the dependency decision (engine/depend: which
// children are applied now, which wait for others they looked up, and the
// waits and cycles the parent's status reports).
//
// Every caller that turns a parent into children calls Plan, with its own
// reader: the controller (its informer caches), `loom render` and `loom
// test` (a file of objects, engine/offline) and `loom diff` (the live
// cluster). So what they show cannot drift from what the controller does.
// The steps only the controller takes between the render and the decision
// (keeping generated keys, labelling children with their shard bucket) are
// Hooks it passes in, run in the order given.
//
// The registered workload clusters are an input too (Options.Clusters):
// the render places children only in those the set's loom.yaml allows
// (engine/render/placement), and the caller says which are registered.
//
// Parents are read in the version the API server stores them in
// (StorageGVK) and rendered in the hub, the version the templates read:
// ToVersion converts one with the set's Converter (ConverterOf), for the
// controller and `loom diff` alike.
//
// Data flows one way: parent + set + reader + clusters → render.Output →
// Hooks → depend.Plan → Result. The package holds no state and reads nothing but
// through the reader.
package pipeline
