package chart

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loom-operator/loom/internal/testutil"
)

// A values.schema.json that points outside itself (a URL, a file) is
// refused when the chart loads: Helm's validator would fetch the URL, or
// read the file, on every render. Nothing is requested.
func TestSchemaRefsOutsideTheFileRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type": "object"}`))
	}))
	defer srv.Close()
	tests := []struct {
		name, schema, want string
	}{
		{"a URL", `{"type": "object", "properties": {"a": {"$ref": "` + srv.URL + `/s.json"}}}`, "/properties/a/$ref"},
		{"a relative file", `{"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}`, "never fetches nor reads"},
		{"a file URL", `{"allOf": [{"$ref": "file:///etc/passwd"}]}`, "/allOf/0/$ref"},
		{"an unknown $schema", `{"$schema": "` + srv.URL + `/meta", "type": "object"}`, "not a JSON Schema draft"},
		{"in a subchart", `{"type": "object"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"c/Chart.yaml":           "apiVersion: v2\nname: c\nversion: 0.1.0\n",
				"c/templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
				"c/values.schema.json":   tt.schema,
				"c/charts/s/Chart.yaml":  "apiVersion: v2\nname: s\nversion: 0.1.0\n",
				"c/charts/s/values.yaml": "a: 1\n",
			}
			if tt.want == "" { // the subchart's schema points outside
				files["c/charts/s/values.schema.json"] = `{"$ref": "` + srv.URL + `/s.json"}`
				tt.want = "c/charts/s/values.schema.json: /$ref"
			}
			testutil.WriteFiles(t, dir, files)
			_, _, err := Load(os.DirFS(dir), "c", Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one with %q", err, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server got %d requests", n)
	}
	// Fragments and the known drafts load.
	ok := `{"$schema": "https://json-schema.org/draft-07/schema#", "$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}`
	if err := checkRefs(mustJSON(t, ok), ""); err != nil {
		t.Errorf("a local $ref refused: %v", err)
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
