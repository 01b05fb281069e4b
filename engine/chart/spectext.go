package chart

import (
	"text/template/parse"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// Text that tpl runs is either the chart's, written by the chart's
// author (a string of a values.yaml, a file of the chart, a string
// literal of a template), or it comes from the values, which under Loom
// are a parent's spec: whoever may write a parent wrote it. Such text
// runs with the render's identity, so a lookup it makes (directly, or in
// a define it includes) is marked (Position.FromSpec) for the caller to
// refuse. Text counts as the chart's only when it is one of the chart's
// strings verbatim: text put together from the chart's strings (toYaml
// of a default map, say) is taken for the parent's, which errs on the
// side of refusing.

// authoredTexts is every string the chart's author wrote, in every chart
// of the tree: values.yaml's strings (keys too), the files' contents and
// the templates' string literals.
func (c *Chart) authoredTexts() map[string]bool {
	c.authoredOnce.Do(func() {
		out := map[string]bool{}
		var walk func(ch *chartv2.Chart)
		walk = func(ch *chartv2.Chart) {
			valueStrings(ch.Values, out)
			for _, f := range ch.Files {
				out[string(f.Data)] = true
			}
			for _, d := range ch.Dependencies() {
				walk(d)
			}
		}
		walk(c.chart)
		if root, _, err := c.Parse(); err == nil {
			for _, t := range root.Templates() {
				if t.Tree == nil || t.Tree.Root == nil {
					continue
				}
				walkCommands(t.Tree.Root, func(cmd *parse.CommandNode) {
					for _, a := range cmd.Args {
						if s, ok := a.(*parse.StringNode); ok {
							out[s.Text] = true
						}
					}
				})
			}
		}
		c.authored = out
	})
	return c.authored
}

// valueStrings adds the strings of a value tree, keys included, to out.
func valueStrings(v any, out map[string]bool) {
	switch x := v.(type) {
	case string:
		out[x] = true
	case map[string]any:
		for k, e := range x {
			out[k] = true
			valueStrings(e, out)
		}
	case []any:
		for _, e := range x {
			valueStrings(e, out)
		}
	}
}
