// Package crdinstall applies the CustomResourceDefinitions of template
// sets, for loom run --install-crds.
//
// The Manager builds one Installer and calls Install with the loaded sets
// at start and on every template reload, before the sets' controllers
// start or are replaced:
//
//	sets ─► Install ─┬─► a chart's crds/: created when missing, never updated
//	                 └─► the set's generated CRD: LiveBreaks (read the live
//	                     CRD and the stored parents, crd.Check) ─► OwnsCRD?
//	                     ─► server-side apply ─► wait until Established
//
// Install returns data: per set, the error that keeps it from starting
// (SchemaCondition turns it into the TemplateSet's SchemaAccepted
// condition), and whether the CRD's schema changed, so that the kind's
// controller starts again with a new watch. A CRD another manager
// installed is left alone, and a change that would break stored parents
// is refused (BreakingChangeError) unless loom.yaml allows it, and one
// that removes a version still stored or last written in
// (crd.VersionStillStored) is refused whatever loom.yaml says; both are
// recorded as Events on the CRD. loom crd --check reads the same
// LiveBreaks and OwnsCRD.
//
// With Migrating, every set's CRD in place after Install is handed to the
// storage migration (engine/controller/migrate), which Install starts
// once; SetWebhook points the CRDs of several versions at loom run's
// conversion webhook.
package crdinstall
