{{- define "kit.validations.values.single.empty" -}}
  {{- $value := include "kit.utils.getValueFromKey" (dict "key" .valueKey "context" .context) }}
  {{- if not $value -}}
    {{- printf "\n    '%s' must not be empty" .valueKey -}}
  {{- end -}}
{{- end -}}
{{- define "kit.utils.getValueFromKey" -}}
{{- $splitKey := splitList "." .key -}}
{{- $value := "" -}}
{{- $latestObj := $.context.Values -}}
{{- range $splitKey -}}
  {{- if not $latestObj -}}
    {{- printf "please review the entire path of '%s' exists in values" $.key | fail -}}
  {{- end -}}
  {{- $value = ( index $latestObj . ) -}}
  {{- $latestObj = $value -}}
{{- end -}}
{{- printf "%v" (default "" $value) -}}
{{- end -}}
{{- define "kit.warnings.resources" -}}
{{- $values := .sections -}}
{{- $missing := list -}}
{{- range $values -}}
{{- $section := include "kit.utils.getValueFromKey" (dict "key" . "context" $.context) -}}
{{- if not $section -}}
{{- $missing = append $missing . -}}
{{- end -}}
{{- end -}}
{{- join "," $missing -}}
{{- end -}}
{{- define "kit.storage.class" -}}
{{- $storageClass := (.global).storageClass | default .persistence.storageClass -}}
{{- if $storageClass -}}
  {{- if (eq "-" $storageClass) -}}
      {{- printf "storageClassName: \"\"" -}}
  {{- else -}}
      {{- printf "storageClassName: %s" $storageClass -}}
  {{- end -}}
{{- end -}}
{{- end -}}
