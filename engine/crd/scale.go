package crd

import (
	"fmt"
	"slices"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loom-operator/loom/engine/config"
)

// scaleOf is the set's scale subresource (schema.scale), or nil when it
// declares none.
func scaleOf(c config.Config) *config.Scale {
	if c.Schema == nil {
		return nil
	}
	return c.Schema.Scale
}

// subresources is a CRD version's subresources: status, always, and
// scale when the set declares it (the same on every version).
func subresources(c config.Config) *apiextv1.CustomResourceSubresources {
	sub := &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	if s := scaleOf(c); s != nil {
		sub.Scale = &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: s.SpecReplicasPath, StatusReplicasPath: s.StatusReplicasPath}
		if s.LabelSelectorPath != "" {
			sub.Scale.LabelSelectorPath = ptr(s.LabelSelectorPath)
		}
	}
	return sub
}

// withScale checks the parent object's schema s against the scale
// subresource sc, and adds to its status the fields the status template
// writes for it, unless the status schema declares them already: the
// replicas (an integer) and the selector (a string). The spec field must
// be an integer of the spec's schema; the status fields must not be
// Loom's own (reserved: its status fields, and a chart set's).
func withScale(s *apiextv1.JSONSchemaProps, sc config.Scale, reserved []string) error {
	if err := specReplicas(s.Properties["spec"], sc); err != nil {
		return err
	}
	st := s.Properties["status"]
	if st.Properties == nil {
		st.Properties = map[string]apiextv1.JSONSchemaProps{}
	}
	fields := []struct {
		key, path, typ, what, desc string
	}{
		{"statusReplicasPath", sc.StatusReplicasPath, "integer", "the replicas are an integer",
			"The replicas the parent runs, written by the status template; the scale subresource's status.replicas."},
		{"labelSelectorPath", sc.LabelSelectorPath, "string", "the selector is a string",
			"The label selector of the parent's pods, written by the status template; the scale subresource's status.selector."},
	}
	for _, f := range fields {
		if f.path == "" {
			continue
		}
		name := config.StatusField(f.path)
		if slices.Contains(reserved, name) {
			return fmt.Errorf("schema.scale.%s: %s is a status field Loom writes itself (%s); name another, as the status template writes it", f.key, f.path, strings.Join(reserved, ", "))
		}
		got, ok := st.Properties[name]
		switch {
		case !ok:
			p := apiextv1.JSONSchemaProps{Type: f.typ, Description: f.desc}
			if f.typ == "integer" {
				p.Format = "int32"
			}
			st.Properties[name] = p
		case got.Type != f.typ:
			return fmt.Errorf("schema.scale.%s: %s is %s in the status schema; %s", f.key, f.path, article(typeName(&got)), f.what)
		}
	}
	s.Properties["status"] = st
	return nil
}

// specReplicas checks that the spec field sc names is an integer of the
// spec's schema.
func specReplicas(spec apiextv1.JSONSchemaProps, sc config.Scale) error {
	at := ".spec"
	cur := spec
	for _, name := range sc.SpecFields() {
		next, ok := cur.Properties[name]
		if !ok {
			why := ""
			if cur.Type != "object" && cur.Type != "" {
				why = fmt.Sprintf(" (%s is %s)", at, article(typeName(&cur)))
			}
			return fmt.Errorf("schema.scale.specReplicasPath: %s is not in the spec's schema%s; the scale subresource sets it", sc.SpecReplicasPath, why)
		}
		at += "." + name
		cur = next
	}
	if cur.Type != "integer" {
		return fmt.Errorf("schema.scale.specReplicasPath: %s is %s in the schema; the replicas are an integer", sc.SpecReplicasPath, article(typeName(&cur)))
	}
	return nil
}

// article is a type's name with "a" or "an" before it.
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}
