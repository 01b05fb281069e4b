package modes

import (
	"testing"
)

// TestScan tables what the load-time scan refuses, and where: a literal
// value that is not a mode (quoted or not, with a comment), and an
// observed document's extra fields; a computed value, and a document
// that is not observed, are left to the render.
func TestScan(t *testing.T) {
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n"
	tests := []struct {
		name string
		text string
		want string // the error, "" for none
		def  string // loom.yaml's manage
	}{
		{name: "the set's default observe, with data", text: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n", def: "observe",
			want: "a.yaml:5: loom.dev/manage is observe, so Loom never writes this child: its template may set apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations only, not data"},
		{name: "the set's default observe, a child full", text: head + "    loom.dev/manage: full\ndata:\n  a: b\n", def: "observe"},
		{name: "the set's default observe, a document of comments and actions", text: "# nothing\n{{- if .Spec.x }}\n{{- end }}\n", def: "observe"},
		{"a mode", head + "    loom.dev/manage: create-only\ndata:\n  a: b\n", "", ""},
		{"a quoted typo with a comment", head + "    \"loom.dev/manage\": 'ful' # the default\n",
			`a.yaml:6: loom.dev/manage is "ful"; it must be one of full, create-only, observe, patch (did you mean "full"?)`, ""},
		{"a computed value", head + "    loom.dev/manage: {{ .Spec.mode }}\n", "", ""},
		{"observed, named only", head + "    loom.dev/manage: observe\n    loom.dev/delete-policy: orphan\n  namespace: x\n", "", ""},
		{"observed with data", head + "    loom.dev/manage: observe\ndata:\n  a: b\n",
			"a.yaml:7: loom.dev/manage is observe, so Loom never writes this child: its template may set apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations only, not data", ""},
		{"observed with labels", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n  name: cm\n  annotations:\n    loom.dev/manage: observe\n",
			"a.yaml:4: loom.dev/manage is observe, so Loom never writes this child: its template may set apiVersion, kind, metadata.name, metadata.namespace and loom.dev/ annotations only, not metadata.labels", ""},
		{"a second document's typo, at its line", head + "data:\n  a: b\n---\n" + head + "    loom.dev/manage: obsrve\n",
			`a.yaml:14: loom.dev/manage is "obsrve"; it must be one of full, create-only, observe, patch (did you mean "observe"?)`, ""},
		{"data in another document than the observed one", head + "    loom.dev/manage: observe\n---\n" + head + "data:\n  a: b\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Scan(map[string][]byte{"a.yaml": []byte(tt.text)}, tt.def)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Scan = %q\nwant   %q", got, tt.want)
			}
		})
	}
}
