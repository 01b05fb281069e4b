{{- define "shared.banner" -}}from-db{{- end }}
{{- define "db.name" -}}{{ .Release.Name }}-db{{- end }}
