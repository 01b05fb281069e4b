package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
)

func TestLookupDeferred(t *testing.T) {
	tests := []struct {
		name         string
		files        map[string]string
		live         string // the reader's objects
		wantChildren []string
		wantDeferred []string // "file: reads"
		wantErr      string   // error prefix
	}{
		{
			name:         "required on a field of an own child that does not exist yet",
			files:        map[string]string{"cm.yaml": needsClusterIP, "svc.yaml": webService},
			wantChildren: []string{"Service web"},
			wantDeferred: []string{"cm.yaml: Service default/web own"},
		},
		{
			name:         "the own child exists",
			files:        map[string]string{"cm.yaml": needsClusterIP, "svc.yaml": webService},
			live:         liveService,
			wantChildren: []string{"ConfigMap endpoint", "Service web"},
		},
		{
			name: "required on a missing declared object is an error",
			files: map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: endpoint
data:
  ip: {{ required "no settings" (lookup "v1" "ConfigMap" .Namespace "settings").data }}
`},
			wantErr: "cm.yaml:6: ",
		},
		{
			name:    "a file that fails with no lookup is an error",
			files:   map[string]string{"cm.yaml": "{{ fail \"broken\" }}\n", "svc.yaml": webService},
			wantErr: "cm.yaml:1: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files[config.File] = lookupConfig
			s := loadSet(t, tt.files)
			objs, err := ReadParents(strings.NewReader(tt.live))
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.RenderWith(app(t, ""), NewObjectsReader(objs))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("RenderWith succeeded with children %v and %d deferred, want an error", names(out.Children), len(out.Deferred))
				}
				wantPrefix(t, err.Error(), tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("RenderWith: %v", err)
			}
			if diff := cmp.Diff(tt.wantChildren, names(out.Children)); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			var deferred []string
			for _, d := range out.Deferred {
				var reads []string
				for _, rd := range d.Reads {
					reads = append(reads, summary(rd))
				}
				deferred = append(deferred, d.File+": "+strings.Join(reads, ", "))
				var re *Error
				if !errors.As(d.Err, &re) || re.File != d.File || re.Line != 6 {
					t.Errorf("deferred error %v is not an *Error at %s:6", d.Err, d.File)
				}
			}
			if diff := cmp.Diff(tt.wantDeferred, deferred); diff != "" {
				t.Errorf("deferred (-want +got):\n%s", diff)
			}
			// Render, which has no reader, reports a deferred file as the
			// error it is.
			if len(tt.wantDeferred) > 0 {
				_, err := s.Render(app(t, ""))
				if err == nil || !strings.HasPrefix(err.Error(), "cm.yaml:6: ") {
					t.Errorf("Render error = %v, want the deferred file's", err)
				}
			}
		})
	}
}
