{{- define "lib.labels" -}}
lib.example/owner: {{ .Release.Name }}
{{- end }}
