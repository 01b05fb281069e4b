package hook

import "testing"

// NeverAppliedFile leaves a file out only when its text shows that every
// document is a hook Loom never applies.
func TestNeverAppliedFile(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n"
	tests := []struct {
		name, text string
		want       bool
	}{
		{"test hook", pod + "    helm.sh/hook: test\n", true},
		{"quoted key and value", pod + "    \"helm.sh/hook\": \"test-success\"\n", true},
		{"single-quoted value", pod + "    helm.sh/hook: 'pre-delete'\n", true},
		{"pre-delete and post-delete", pod + "    helm.sh/hook: pre-delete,post-delete\n", true},
		{"unknown type: Helm skips it", pod + "    helm.sh/hook: pre-install,crd-install\n", true},
		{"whole file in an if", "{{- if .Values.t }}\n" + pod + "    helm.sh/hook: test\n{{- end }}\n", true},
		{"two test documents", pod + "    helm.sh/hook: test\n---\n" + pod + "    helm.sh/hook: test\n", true},
		{"pre-install", pod + "    helm.sh/hook: pre-install\n", false},
		{"test and an ordinary document", pod + "    helm.sh/hook: test\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", false},
		{"annotation in an if", pod + "    {{- if .Values.t }}\n    helm.sh/hook: test\n    {{- end }}\n", false},
		{"annotation in an else", "{{- if .Values.t }}\n" + pod + "    a: b\n{{- else }}\n" + pod + "    helm.sh/hook: test\n{{- end }}\n", false},
		{"computed value", pod + "    helm.sh/hook: {{ .Values.hook }}\n", false},
		{"annotations from a helper", pod + "    {{- include \"hooks\" . | nindent 4 }}\n", false},
		{"not under metadata.annotations", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  helm.sh/hook: test\n", false},
		{"an action across lines", "{{- if\n .Values.t }}\n" + pod + "    helm.sh/hook: test\n{{- end }}\n", false},
		{"no document", "{{/* nothing */}}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeverAppliedFile([]byte(tt.text)); got != tt.want {
				t.Errorf("NeverAppliedFile = %v, want %v:\n%s", got, tt.want, tt.text)
			}
		})
	}
}
