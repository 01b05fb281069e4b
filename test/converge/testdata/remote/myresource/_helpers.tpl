{{/* Labels shared by every child. */}}
{{- define "myresource.labels" -}}
app.kubernetes.io/name: myresource
app.kubernetes.io/instance: {{ .Name }}
{{- end }}

{{/* The subset of labels that selects the Deployment's pods. */}}
{{- define "myresource.selector" -}}
app.kubernetes.io/name: myresource
app.kubernetes.io/instance: {{ .Name }}
{{- end }}

{{/* The ConfigMap's name; the Deployment mounts it. */}}
{{- define "myresource.configName" -}}
{{ .Name }}-config
{{- end }}

{{/* The registry mirror the namespace's platform team set in the
     loom-platform ConfigMap (data.registryMirror), as a prefix of the
     image: "mirror.example.com/". Nothing when there is none. */}}
{{- define "myresource.mirror" -}}
{{- with dig "data" "registryMirror" "" (lookup "v1" "ConfigMap" .Namespace "loom-platform") -}}
{{ trimSuffix "/" . }}/
{{- end -}}
{{- end }}
