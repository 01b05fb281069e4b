// Package rollouts drives the staged rollout of one template set's
// revisions: the TemplateSet and TemplateRevision controller.
//
// A Rollout belongs to the parent controller of its set (engine/controller),
// which it sees through the Host interface: the set as its folder holds it
// now, the parents to decide over (Parent: each object with what its
// conditions say), and a way to have parents reconciled.
// The Manager's client, recorder, metrics and options reach it as a Config.
//
// Data flows in a loop. The TemplateSet's informer, a reload of the folder
// or a moved parent's status wakes the rollout (Wake); it reads the
// TemplateSet (creating it the first time) and what Decide needs of every
// parent, calls engine/rollout's Decide, keeps the files of the revisions
// the state names as TemplateRevisions, writes the state to the
// TemplateSet's status, publishes the view that reconciles read (SetFor),
// enqueues the parents whose revision moved, and prunes the revisions no
// longer named. On a sharded replica only the holder of the set's bucket
// decides; the others follow the status it writes.
//
// The typed objects, resource names and labels come from api/v1alpha1.
package rollouts
