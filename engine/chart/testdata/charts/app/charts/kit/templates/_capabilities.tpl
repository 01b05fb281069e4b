{{- define "kit.capabilities.kubeVersion" -}}
{{- default .Capabilities.KubeVersion.Version ((.Values.global).kubeVersion) -}}
{{- end -}}
{{- define "kit.capabilities.apiVersions.has" -}}
{{- $providedAPIVersions := default .context.Values.apiVersions ((.context.Values.global).apiVersions) -}}
{{- if and (empty $providedAPIVersions) (.context.Capabilities.APIVersions.Has .version) -}}
    {{- true -}}
{{- else if has .version $providedAPIVersions -}}
    {{- true -}}
{{- end -}}
{{- end -}}
{{- define "kit.capabilities.policy.apiVersion" -}}
{{- if semverCompare "<1.21-0" (include "kit.capabilities.kubeVersion" .) -}}
{{- print "policy/v1beta1" -}}
{{- else -}}
{{- print "policy/v1" -}}
{{- end -}}
{{- end -}}
{{- define "kit.capabilities.hpa.apiVersion" -}}
{{- if semverCompare "<1.23-0" (include "kit.capabilities.kubeVersion" .context) -}}
{{- print "autoscaling/v2beta2" -}}
{{- else -}}
{{- print "autoscaling/v2" -}}
{{- end -}}
{{- end -}}
{{- define "kit.capabilities.ingress.apiVersion" -}}
{{- print "networking.k8s.io/v1" -}}
{{- end -}}
