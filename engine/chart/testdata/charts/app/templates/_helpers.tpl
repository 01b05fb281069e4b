{{- define "app.image" -}}
{{ include "kit.images.image" (dict "imageRoot" .Values.image "global" .Values.global "chart" .Chart) }}
{{- end -}}
{{- define "app.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
    {{ default (include "kit.names.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
    {{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}
{{- define "app.secretName" -}}
{{ include "kit.secrets.name" (dict "existingSecret" .Values.auth.existingSecret "context" $) }}
{{- end -}}
{{- define "app.validateValues" -}}
{{- $messages := list -}}
{{- $messages = append $messages (include "kit.validations.values.single.empty" (dict "valueKey" "image.repository" "context" .)) -}}
{{- $messages = without $messages "" -}}
{{- $message := join "\n" $messages -}}
{{- if $message -}}
{{-   printf "\nVALUES VALIDATION:\n%s" $message | fail -}}
{{- end -}}
{{- end -}}
