{{/* Labels shared by every child. */}}
{{- define "myresource.labels" -}}
app.kubernetes.io/name: myresource
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The subset of labels that selects the Deployment's pods. */}}
{{- define "myresource.selector" -}}
app.kubernetes.io/name: myresource
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ConfigMap's name; the Deployment mounts it. */}}
{{- define "myresource.configName" -}}
{{ .Release.Name }}-config
{{- end }}
