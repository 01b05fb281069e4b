package kinds

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanKinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		texts   map[string]string
		want    []string // group/Kind@file:line
		wantErr string
	}{
		{
			name: "documents of a file, in order, once each",
			texts: map[string]string{"a.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: x
---
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    kind: NotAKind
---
apiVersion: v1
kind: ConfigMap
`},
			want: []string{"/ConfigMap@a.yaml:2", "apps/Deployment@a.yaml:7"},
		},
		{
			name: "both branches of an if, kind before apiVersion, quotes and comments",
			texts: map[string]string{"b.yaml": `{{- if .Spec.stateful }}
apiVersion: apps/v1
kind: StatefulSet
{{- else }}
kind: "Deployment" # the default
apiVersion: 'apps/v1'
{{- end }}
`},
			want: []string{"apps/StatefulSet@b.yaml:3", "apps/Deployment@b.yaml:5"},
		},
		{
			name: "a computed apiVersion of a built-in kind resolves by kind",
			texts: map[string]string{"templates/hpa.yaml": `apiVersion: {{ include "hpa.apiVersion" . }}
kind: HorizontalPodAutoscaler
`, "templates/ing.yaml": `apiVersion: {{ .Capabilities.APIVersions | x }}
kind: Ingress
`},
			want: []string{"autoscaling/HorizontalPodAutoscaler@templates/hpa.yaml:2", "networking.k8s.io/Ingress@templates/ing.yaml:2"},
		},
		{
			name:  "partials and Lists",
			texts: map[string]string{"_helpers.tpl": "{{- define \"cm\" }}\napiVersion: v1\nkind: Secret\n{{- end }}\n", "l.yaml": "apiVersion: v1\nkind: List\nitems: []\n"},
			want:  []string{"/Secret@_helpers.tpl:3"},
		},
		{
			name:    "a computed kind is refused with its place",
			texts:   map[string]string{"c.yaml": "apiVersion: v1\nkind: {{ .Spec.kind }}\n"},
			wantErr: "c.yaml:2: kind is computed ({{ .Spec.kind }})",
		},
		{
			name:    "a computed apiVersion of a custom kind is refused",
			texts:   map[string]string{"d.yaml": "apiVersion: {{ .Spec.v }}\nkind: Widget\n"},
			wantErr: "d.yaml:1: apiVersion is computed ({{ .Spec.v }})",
		},
		{
			name:    "a kind several groups serve needs its apiVersion",
			texts:   map[string]string{"e.yaml": "kind: Event\n"},
			wantErr: "e.yaml:1: apiVersion is computed (no apiVersion line; Event is served by , events.k8s.io)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			texts := map[string][]byte{}
			for n, s := range tc.texts {
				texts[n] = []byte(s)
			}
			got, err := ScanKinds(texts)
			if tc.wantErr != "" {
				var ce *ComputedError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a ComputedError with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, k := range got {
				names = append(names, fmt.Sprintf("%s/%s@%s:%d", k.Group, k.Kind, k.File, k.Line))
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		})
	}
}
