package offline

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/render/convert"
)

// Admission does to the parents read from files what the API server does
// to them on create, for a set with a schema in loom.yaml: unknown fields
// are pruned, defaults applied, and a parent the API server would refuse
// is an error with the API server's message (engine/crd.Admitter). So
// `loom render` and `loom test` show what renders for the parent the
// cluster would store. A nil *Admission (a set without a schema) leaves
// parents as they are.
//
// A set that serves several versions admits a parent of any of them: it
// is converted to the version the CRD stores (the set's Converter), then
// admitted, then converted to the hub, the version the templates read.
type Admission struct {
	admitter *crd.Admitter
	conv     *convert.Converter // nil for a set of one version
}

// NewAdmission compiles the set's schema once, for every parent the set
// renders offline. It returns nil for a set without a schema (a chart
// set has one: inferred from its values.yaml).
func NewAdmission(set *render.Set) (*Admission, error) {
	if set.Config.Schema == nil && set.Chart() == nil {
		return nil, nil
	}
	def, err := set.CRD()
	if err != nil {
		return nil, fmt.Errorf("generate the parent's CRD for %s: %w", set.Dir, err)
	}
	a, err := crd.NewAdmitter(def)
	if err != nil {
		return nil, fmt.Errorf("prepare the parent's schema for %s: %w", set.Dir, err)
	}
	return &Admission{admitter: a, conv: set.Converter()}, nil
}

// Admit admits each parent read from path in place, and returns the
// warnings the API server would send back (unknown fields it pruned), each
// naming path and the parent. Everything but metadata and status becomes
// what the API server would store; metadata and status stay as given (the
// API server drops status on create, but a parent read from the cluster
// keeps its own). A parent of another kind than the set's is left for the
// render to refuse. The first parent refused is an error naming path,
// with the API server's message, as is a conversion that fails.
func (ad *Admission) Admit(path string, parents []*unstructured.Unstructured) ([]string, error) {
	if ad == nil {
		return nil, nil
	}
	var warnings []string
	stored := ad.admitter.GroupVersionKind()
	for _, p := range parents {
		if err := ad.convert(p, stored.Version); err != nil {
			return warnings, fmt.Errorf("%s: %w", path, err)
		}
		if p.GroupVersionKind() != stored {
			continue
		}
		admitted, ws, err := ad.admitter.AdmitWithWarnings(p.Object)
		for _, w := range ws {
			warnings = append(warnings, fmt.Sprintf("%s: %s %s: %s", path, p.GetKind(), p.GetName(), w))
		}
		if err != nil {
			return warnings, fmt.Errorf("%s: %w", path, err)
		}
		keep := map[string]any{}
		for _, k := range []string{"metadata", "status"} {
			if v, ok := p.Object[k]; ok {
				keep[k] = v
			}
		}
		delete(admitted, "status")
		maps.Copy(admitted, keep)
		p.Object = admitted
		if ad.conv != nil {
			if err := ad.convert(p, ad.conv.Hub()); err != nil {
				return warnings, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return warnings, nil
}

// convert converts p, a parent of the set in any version, to version, in
// place. A set of one version, or an object of another kind, is left as
// it is.
func (ad *Admission) convert(p *unstructured.Unstructured, version string) error {
	if ad.conv == nil || p.GroupVersionKind().GroupKind() != ad.admitter.GroupVersionKind().GroupKind() {
		return nil
	}
	out, err := ad.conv.Convert(p, version)
	if err != nil {
		return err
	}
	p.Object = out.Object
	return nil
}
