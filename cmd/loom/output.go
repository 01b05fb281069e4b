package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The values of -o/--output. The empty format is a command's own default
// output (text, or a YAML stream for loom render).
const (
	outputYAML = "yaml"
	outputJSON = "json"
)

// outputFormats are the -o values every command that takes -o accepts,
// with the description shell completion shows.
var outputFormats = []string{
	outputJSON + "\tJSON, indented as kubectl -o json indents it",
	outputYAML + "\tYAML",
}

// outputFlag is the value of -o/--output. Set refuses a format that is not
// in outputFormats, so an unknown one is a usage error before the command
// runs.
type outputFlag struct{ format *string }

func (o outputFlag) String() string { return *o.format }
func (o outputFlag) Type() string   { return "format" }

// Set accepts one of outputFormats.
func (o outputFlag) Set(v string) error {
	if !slices.Contains(outputNames(), v) {
		return fmt.Errorf("unknown output format %q: want one of %s", v, strings.Join(outputNames(), ", "))
	}
	*o.format = v
	return nil
}

// outputNames are the names of outputFormats.
func outputNames() []string {
	var names []string
	for _, f := range outputFormats {
		name, _, _ := strings.Cut(f, "\t")
		names = append(names, name)
	}
	return names
}

// addOutputFlag registers -o/--output on cmd, with shell completion of its
// values; the chosen format, or "" for the default output, goes into
// *format. defaultOutput names the default in the flag's help.
func addOutputFlag(cmd *cobra.Command, format *string, defaultOutput string) {
	cmd.Flags().VarP(outputFlag{format: format}, "output", "o",
		fmt.Sprintf("output format: %s (default: %s)", strings.Join(outputNames(), " or "), defaultOutput))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
}

// printObjects writes objs in format: as a v1 List, the document `kubectl
// get -o json|yaml` prints for several objects and `kubectl apply -f`
// reads, in the order given. items is [] when there are no objects. The
// default format, "", is not printObjects' to choose: the caller prints
// its own.
func printObjects(w io.Writer, format string, objs []*unstructured.Unstructured) error {
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		items = append(items, o.Object)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items}
	return printDocument(w, format, list)
}

// printObject writes one object in format, as `kubectl get KIND NAME -o
// json|yaml` prints it.
func printObject(w io.Writer, format string, obj *unstructured.Unstructured) error {
	return printDocument(w, format, obj.Object)
}

// printDocument writes v, a value encoding/json can encode, in format:
// JSON indented by four spaces as kubectl's, or YAML with the same field
// names (sigs.k8s.io/yaml goes through JSON). Map keys are sorted, so the
// same value always gives the same bytes.
func printDocument(w io.Writer, format string, v any) error {
	var out []byte
	var err error
	switch format {
	case outputJSON:
		out, err = json.MarshalIndent(v, "", "    ")
		out = append(out, '\n')
	case outputYAML:
		out, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unknown output format %q", format)
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", format, err)
	}
	_, err = w.Write(out)
	return err
}
