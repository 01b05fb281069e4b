{{- define "site.render" -}}
{{- $value := typeIs "string" .value | ternary .value (.value | toYaml) -}}
{{- tpl $value .context -}}
{{- end -}}
{{- define "site.sharedToken" -}}
{{- (lookup "v1" "Secret" "shared" "token").data | default dict | toJson -}}
{{- end -}}
