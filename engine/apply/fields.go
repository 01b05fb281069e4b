package apply

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ownedFields returns the set of fields manager owns in obj through
// server-side apply; empty when it owns none or the entry cannot be read.
func ownedFields(obj *unstructured.Unstructured, manager string) *fieldpath.Set {
	s := &fieldpath.Set{}
	if obj == nil {
		return s
	}
	e := pack.OwnEntry(obj, manager)
	if e == nil {
		return s
	}
	b, err := json.Marshal(e["fieldsV1"])
	if err != nil {
		return s
	}
	if err := s.FromJSON(bytes.NewReader(b)); err != nil {
		return &fieldpath.Set{}
	}
	return s
}

// regained returns the fields manager owns in after but did not own in
// before, as sorted paths such as "spec.replicas" or
// `spec.template.spec.containers[name="app"].image`: the fields another
// writer had taken over or removed, which an apply took back. Only the
// innermost fields are listed.
func regained(before, after *unstructured.Unstructured, manager string) []string {
	diff := ownedFields(after, manager).Difference(ownedFields(before, manager)).Leaves()
	var out []string
	diff.Iterate(func(p fieldpath.Path) {
		out = append(out, strings.TrimPrefix(p.String(), "."))
	})
	sort.Strings(out)
	return out
}
