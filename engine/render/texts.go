package render

import (
	"slices"
	"strings"
)

// ChildTexts returns the sources of the templates that may render
// children, by file name: the set's templates and partials, or, for a
// chart set, every template of the chart and its subcharts (by path in the
// chart's folder in the set, as errors name them). The status template,
// the conversion templates and loom.yaml are left out. Callers must not
// modify the slices.
func (s *Set) ChildTexts() map[string][]byte {
	if s.chart != nil {
		out := make(map[string][]byte, len(s.chartTexts))
		for name, b := range s.chartTexts {
			// NOTES.txt renders no object; an omitted file, only objects
			// Loom never applies.
			if !strings.HasSuffix(name, ".txt") && !s.omitted[name] {
				out[s.chart.DiskPath(name)] = b
			}
		}
		return out
	}
	out := make(map[string][]byte, len(s.sources))
	for name, b := range s.sources {
		if name == "loom.yaml" || name == s.Config.Status || slices.Contains(s.Config.ConversionTemplates(), name) {
			continue
		}
		out[name] = b
	}
	return out
}

// Seeded reports whether the set's chart calls a random function: Loom
// then keeps a seed Secret per parent, in the parent's namespace.
func (s *Set) Seeded() bool { return s.seeded }
