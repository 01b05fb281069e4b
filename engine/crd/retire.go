package crd

import (
	"fmt"
	"slices"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Overridable reports whether schema.allowBreakingChanges may let the
// change through. Every break may, but removing a version still in use
// (VersionStillStored): the parents stored in it could no longer be
// read, and their data would be lost.
func (b Break) Overridable() bool { return b.Kind != VersionStillStored }

// retired names the versions old serves or stores that newCRD no longer
// has while something uses them: the live CRD's status.storedVersions
// lists them (any parent may be stored in them: all are named), or a
// stored parent was last written in them (the newest of its managedFields
// entries has that apiVersion: those are named). It is checked with
// nothing stored too: storedVersions alone blocks a removal.
func retired(old, newCRD *apiextv1.CustomResourceDefinition, stored []map[string]any) []Break {
	var breaks []Break
	for _, ov := range old.Spec.Versions {
		if version(newCRD, ov.Name) != nil {
			continue
		}
		if slices.Contains(old.Status.StoredVersions, ov.Name) {
			all := parentNames(stored, func(map[string]any) bool { return true })
			breaks = append(breaks, named(Break{Kind: VersionStillStored, Version: ov.Name,
				Detail: "version removed while still stored (status.storedVersions lists it)"}, all))
			continue
		}
		apiVersion := old.Spec.Group + "/" + ov.Name
		if names := parentNames(stored, func(obj map[string]any) bool { return lastWritten(obj) == apiVersion }); len(names) > 0 {
			breaks = append(breaks, named(Break{Kind: VersionStillStored, Version: ov.Name,
				Detail: "version removed while parents were last written in it (managedFields)"}, names))
		}
	}
	return breaks
}

// lastWritten is the apiVersion of the newest of obj's managedFields
// entries (the first of those with the same time), or "".
func lastWritten(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var newest time.Time
	apiVersion := ""
	for _, e := range entries {
		m, _ := e.(map[string]any)
		at, _ := m["time"].(string)
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			continue
		}
		if v, _ := m["apiVersion"].(string); apiVersion == "" || t.After(newest) {
			newest, apiVersion = t, v
		}
	}
	return apiVersion
}

// RetiredAdvice says what to do about a VersionStillStored break.
func RetiredAdvice(version string) string {
	return fmt.Sprintf("to retire %s, keep it in loom.yaml with another storageVersion, let Loom migrate the stored parents (status.storedVersions shrinks to the storage version), then remove it; schema.allowBreakingChanges does not override this: the parents' data would be lost", version)
}
