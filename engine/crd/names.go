package crd

import (
	"slices"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loom-operator/loom/engine/config"
)

// Category is the kubectl category of every generated CRD: `kubectl get
// loom` lists the parents of every set.
const Category = "loom"

// namesOf is the parent kind's names: loom.yaml's, or the defaults.
func namesOf(p config.ParentRef) apiextv1.CustomResourceDefinitionNames {
	n := apiextv1.CustomResourceDefinitionNames{
		Kind:       p.Kind,
		ListKind:   p.Kind + "List",
		Plural:     p.Plural,
		Singular:   p.Singular,
		ShortNames: slices.Clone(p.ShortNames),
		Categories: slices.Clone(p.Categories),
	}
	if n.Plural == "" {
		n.Plural = Plural(p.Kind)
	}
	if n.Singular == "" {
		n.Singular = strings.ToLower(p.Kind)
	}
	if !slices.Contains(n.Categories, Category) {
		n.Categories = append(n.Categories, Category)
	}
	return n
}

// Plural is a kind's default resource name: the kind in lower case with
// "s", or "es" after s, x, z, ch and sh, or "ies" for a "y" after a
// consonant (Policy: policies).
func Plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "z"),
		strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case len(k) > 1 && k[len(k)-1] == 'y' && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}
