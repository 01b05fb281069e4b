package config

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Clusters says which registered workload clusters a set may place
// children in (loom.yaml's clusters): those named in Names, and those whose
// registration's labels Selector matches. A child names its cluster with
// the loom.dev/cluster annotation; without one it goes to the cluster Loom
// runs in, which every set may use. Templates see the allowed clusters as
// .Clusters. A parent cannot widen the list: it is the set's, not the
// spec's.
type Clusters struct {
	// Names are clusters the set may use, by their registered name. A
	// name no registration has is allowed and unused until the cluster is
	// registered.
	Names []string `json:"names,omitempty"`
	// Selector, when set, allows every registered cluster whose
	// registration's labels it matches, as a Kubernetes label selector
	// does: an empty selector ({}) matches every registered cluster.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// validateClusters checks loom.yaml's clusters.
func validateClusters(c *Clusters) error {
	if c == nil {
		return nil
	}
	if len(c.Names) == 0 && c.Selector == nil {
		return errors.New("clusters: needs names, a selector, or both")
	}
	seen := map[string]bool{}
	for i, n := range c.Names {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return fmt.Errorf("clusters.names[%d] %q: %s", i, n, strings.Join(errs, "; "))
		}
		if seen[n] {
			return fmt.Errorf("clusters.names[%d]: %q is named twice", i, n)
		}
		seen[n] = true
	}
	if c.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(c.Selector); err != nil {
			return fmt.Errorf("clusters.selector: %w", err)
		}
	}
	return nil
}
