package webhook

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/config"
)

// RenamesOnly returns the Converter of a set whose every version converts
// by rename moves alone, or nil for any other set. It is the stand-in for
// the set's own converter (engine/convert, render.Set.Converter, which
// handles every move, templates, and the conversion-data annotation) until
// that one is merged: cmd/loom's converterOf then calls it instead. It
// keeps no field that a version cannot hold.
func RenamesOnly(c config.Config) Converter {
	if len(c.Versions) == 0 {
		return nil
	}
	for _, v := range c.Versions {
		if v.Conversion.ToHub != "" {
			return nil
		}
		for _, m := range v.Conversion.Moves {
			if m.Rename == nil {
				return nil
			}
		}
	}
	return renames{c: c}
}

// renames converts through the hub by the versions' rename moves.
type renames struct{ c config.Config }

func (r renames) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	hub, from := r.c.HubVersion(), obj.GroupVersionKind().Version
	out := obj.DeepCopy()
	if from != to {
		if from != hub {
			v, ok := r.c.Version(from)
			if !ok {
				return nil, fmt.Errorf("version %s is not served by the set", from)
			}
			for _, m := range v.Conversion.Moves {
				move(out, m.Rename.From, m.Rename.To)
			}
		}
		if to != hub {
			v, ok := r.c.Version(to)
			if !ok {
				return nil, fmt.Errorf("version %s is not served by the set", to)
			}
			for i := len(v.Conversion.Moves) - 1; i >= 0; i-- {
				move(out, v.Conversion.Moves[i].Rename.To, v.Conversion.Moves[i].Rename.From)
			}
		}
	}
	out.SetAPIVersion(r.c.ParentGVK().Group + "/" + to)
	return out, nil
}

// move moves the value at the dotted path from to the path to.
func move(obj *unstructured.Unstructured, from, to string) {
	fp, tp := strings.Split(from, "."), strings.Split(to, ".")
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fp...)
	if !ok || err != nil {
		return
	}
	unstructured.RemoveNestedField(obj.Object, fp...)
	// An object the move emptied goes too: it held only the field.
	for i := len(fp) - 1; i > 1; i-- {
		if m, ok, _ := unstructured.NestedMap(obj.Object, fp[:i]...); ok && len(m) == 0 {
			unstructured.RemoveNestedField(obj.Object, fp[:i]...)
		}
	}
	_ = unstructured.SetNestedField(obj.Object, v, tp...)
}
