package cluster

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Select returns the registrations a set may place children in, sorted by
// name: those named in names, and those whose Labels selector matches. A
// nil selector matches none, and an empty one (no requirements) matches
// every registration, as a Kubernetes label selector does; with no names
// and a nil selector the set may use no cluster. A name that no
// registration has is not an error: the cluster may be registered later.
// It fails only on a selector that is not valid.
func Select(regs []Registration, names []string, selector *metav1.LabelSelector) ([]Registration, error) {
	match := labels.Nothing()
	if selector != nil {
		var err error
		if match, err = metav1.LabelSelectorAsSelector(selector); err != nil {
			return nil, fmt.Errorf("cluster selector: %w", err)
		}
	}
	var out []Registration
	for _, reg := range regs {
		if slices.Contains(names, reg.Name) || match.Matches(labels.Set(reg.Labels)) {
			out = append(out, reg)
		}
	}
	slices.SortStableFunc(out, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
