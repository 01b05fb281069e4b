{{- define "kit.resources.preset" -}}
{{- $presets := dict
  "nano" (dict "requests" (dict "cpu" "100m" "memory" "128Mi") "limits" (dict "cpu" "150m" "memory" "192Mi"))
  "micro" (dict "requests" (dict "cpu" "250m" "memory" "256Mi") "limits" (dict "cpu" "375m" "memory" "384Mi"))
  "small" (dict "requests" (dict "cpu" "500m" "memory" "512Mi") "limits" (dict "cpu" "750m" "memory" "768Mi"))
  "medium" (dict "requests" (dict "cpu" "500m" "memory" "1024Mi") "limits" (dict "cpu" "750m" "memory" "1536Mi"))
  "large" (dict "requests" (dict "cpu" "1.0" "memory" "2048Mi") "limits" (dict "cpu" "1.5" "memory" "3072Mi"))
 }}
{{- if hasKey $presets .type -}}
{{- index $presets .type | toYaml -}}
{{- else -}}
{{- printf "ERROR: Preset key '%s' invalid. Allowed values are %s" .type (join "," (keys $presets | sortAlpha)) | fail -}}
{{- end -}}
{{- end -}}
