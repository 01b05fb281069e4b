package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Scale is loom.yaml's schema.scale: the parent kind's scale subresource,
// through which `kubectl scale` and a HorizontalPodAutoscaler set the
// parent's replicas. Its keys are those of apiextensions'
// CustomResourceSubresourceScale, and the CRD gets them as written, on
// every version the set serves. Loom never writes the spec field: the
// templates read it, like any spec field. The status template writes the
// status fields (the replicas the children run, and the label selector of
// their pods), which the CRD's status schema holds.
type Scale struct {
	// SpecReplicasPath is the spec field that holds the desired replicas,
	// as .spec.replicas: an integer field of the spec's schema, in every
	// version.
	SpecReplicasPath string `json:"specReplicasPath"`
	// StatusReplicasPath is the status field that holds the replicas
	// running, as .status.replicas: a field directly under the status,
	// which the status template writes as an integer.
	StatusReplicasPath string `json:"statusReplicasPath"`
	// LabelSelectorPath is the status field that holds the label selector
	// of the pods the parent runs, as a string (app=web,tier=front), as
	// .status.selector; optional. A HorizontalPodAutoscaler that scales on
	// the pods' metrics needs it.
	LabelSelectorPath string `json:"labelSelectorPath,omitempty"`
}

// fieldPath is a JSON path of plain field names, as .spec.workers.replicas.
var fieldPath = regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// SpecFields is the spec field SpecReplicasPath names, as its names under
// spec: [workers replicas] for .spec.workers.replicas.
func (s Scale) SpecFields() []string {
	return strings.Split(strings.TrimPrefix(s.SpecReplicasPath, ".spec."), ".")
}

// StatusField is the status field a path (StatusReplicasPath or
// LabelSelectorPath) names: replicas for .status.replicas; "" for none.
func StatusField(path string) string { return strings.TrimPrefix(path, ".status.") }

// validateScale checks schema.scale: the paths' form (that the spec field
// is an integer of the schema, and that the status fields are not Loom's,
// is checked when the CRD is generated, engine/crd), a status template
// to write the status fields, and no scale on a version's schema.
func validateScale(c *Config) error {
	for i, v := range c.Versions {
		if v.Schema != nil && v.Schema.Scale != nil {
			return fmt.Errorf("versions[%d].schema.scale: declare it once, on the hub's schema: every version gets the same scale subresource", i)
		}
	}
	if c.Schema == nil || c.Schema.Scale == nil {
		return nil
	}
	s := c.Schema.Scale
	switch {
	case s.SpecReplicasPath == "":
		return errors.New("schema.scale.specReplicasPath is required: the spec field that holds the replicas, as .spec.replicas")
	case !fieldPath.MatchString(s.SpecReplicasPath) || !strings.HasPrefix(s.SpecReplicasPath, ".spec."):
		return fmt.Errorf("schema.scale.specReplicasPath: %q must be a field of the spec, as .spec.replicas (field names only, no list index)", s.SpecReplicasPath)
	case s.StatusReplicasPath == "":
		return errors.New("schema.scale.statusReplicasPath is required: the status field the status template writes the running replicas to, as .status.replicas")
	}
	if err := statusPath("statusReplicasPath", s.StatusReplicasPath, ".status.replicas"); err != nil {
		return err
	}
	if s.LabelSelectorPath != "" {
		if err := statusPath("labelSelectorPath", s.LabelSelectorPath, ".status.selector"); err != nil {
			return err
		}
		if s.LabelSelectorPath == s.StatusReplicasPath {
			return fmt.Errorf("schema.scale.labelSelectorPath: %s is statusReplicasPath already; the selector needs a field of its own, as .status.selector", s.LabelSelectorPath)
		}
	}
	if c.Status == "" {
		fields := s.StatusReplicasPath
		if s.LabelSelectorPath != "" {
			fields += " and " + s.LabelSelectorPath
		}
		return fmt.Errorf("schema.scale: a set with a scale subresource needs a status template (status:) that writes %s: Loom cannot know which children's pods the parent counts", fields)
	}
	return nil
}

// statusPath checks that path is a field directly under the status.
func statusPath(key, path, example string) error {
	if !fieldPath.MatchString(path) || strings.Count(path, ".") != 2 || !strings.HasPrefix(path, ".status.") {
		return fmt.Errorf("schema.scale.%s: %q must be a field directly under the status, as %s", key, path, example)
	}
	return nil
}
