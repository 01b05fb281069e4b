{{/*
loom.fullname names the release's objects: fullnameOverride, else the
release name when it contains "loom", else "<release>-loom"; at most 63
characters.
*/}}
{{- define "loom.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* loom.serviceAccountName is the ServiceAccount Loom runs as. */}}
{{- define "loom.serviceAccountName" -}}
{{- default (include "loom.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/*
loom.selectorLabels select Loom's pods. They never change after install
(a Deployment's selector is immutable).
*/}}
{{- define "loom.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
loom.labels go on every object. app.kubernetes.io/name and
app.kubernetes.io/version on the Deployment and its pods are how
`loom version` finds an installation.
*/}}
{{- define "loom.labels" -}}
{{ include "loom.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: loom
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* loom.image is repository:tag, or repository@digest when pinned. */}}
{{- define "loom.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
loom.leaderElect is "true" when leader election is on: unless set to
false, always, one replica or more (a rolling upgrade runs the new pod
beside the old one, and only the Lease keeps it from writing too); never
with sharding, where every replica reconciles (loom run refuses --sharded
with --leader-elect). leaderElection.enabled true with sharding fails the
render rather than be dropped in silence: one of the two values is a
mistake, and only the user knows which.
*/}}
{{- define "loom.leaderElect" -}}
{{- if .Values.sharding.enabled -}}
{{- if and (kindIs "bool" .Values.leaderElection.enabled) .Values.leaderElection.enabled -}}
{{- fail "sharding.enabled and leaderElection.enabled exclude each other: sharded replicas all reconcile, each its own parents; leave leaderElection.enabled unset (null) or false" -}}
{{- end -}}
false
{{- else if kindIs "bool" .Values.leaderElection.enabled -}}
{{- .Values.leaderElection.enabled -}}
{{- else -}}
true
{{- end -}}
{{- end -}}

{{/*
loom.writers names what keeps Loom's replicas from writing at once: the
leader-election Lease or the shard group, as the flag that sets it; empty
for a Loom without either. Computed from args (a list of loom run's
arguments), so that the running Deployment's can be read the same way.
*/}}
{{- define "loom.writers" -}}
{{- range . -}}
{{- if or (hasPrefix "--leader-election-id=" .) (hasPrefix "--shard-group=" .) -}}
{{- . -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
loom.strategy is the Deployment's strategy, given the args the new pods
run with (.args). A rolling upgrade runs old and new pods together, so it
is used only where they share what keeps them from writing at once (see
loom.writers): the same leader-election Lease, or the same shard group.
Otherwise (no leader election, or an upgrade that switches between leader
election and sharding, or to another group or Lease, as the running
Deployment, looked up, shows) every old pod stops before a new one starts.
Under `helm template` the lookup finds nothing: switching modes with a
static manifest needs the Deployment deleted first.
*/}}
{{- define "loom.strategy" -}}
{{- $writers := include "loom.writers" .args -}}
{{- $recreate := not $writers -}}
{{- $running := lookup "apps/v1" "Deployment" .root.Release.Namespace (include "loom.fullname" .root) -}}
{{- if $running -}}
{{- range $running.spec.template.spec.containers -}}
{{- if and (eq .name "loom") (ne (include "loom.writers" (.args | default list)) $writers) -}}
{{- $recreate = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $recreate -}}
type: Recreate
rollingUpdate: null
{{- else -}}
type: RollingUpdate
{{- /* Set, not left to the API server's defaults: a server-side apply
owns it then, and drops it when a later upgrade switches to Recreate,
which the API server refuses beside a rollingUpdate. */}}
rollingUpdate:
  maxSurge: 25%
  maxUnavailable: 25%
{{- end -}}
{{- end -}}

{{/* loom.shardGroup is --shard-group: sharding.group, else the fullname. */}}
{{- define "loom.shardGroup" -}}
{{- default (include "loom.fullname" .) .Values.sharding.group -}}
{{- end -}}

{{/*
loom.rules is Loom's PolicyRules as a YAML list: files/rbac/rules.yaml,
the CRD writes --install-crds needs, and rbac.extraRules.
*/}}
{{- define "loom.rules" -}}
{{- $rules := include "loom.fileRules" . | fromYamlArray -}}
{{- if .Values.installCRDs -}}
{{- $rules = append $rules (dict "apiGroups" (list "apiextensions.k8s.io") "resources" (list "customresourcedefinitions") "verbs" (list "create" "patch")) -}}
{{- end -}}
{{- concat $rules .Values.rbac.extraRules | toYaml -}}
{{- end -}}

{{/*
loom.fileRules is files/rbac/rules.yaml, checked to be a list of rules.
*/}}
{{- define "loom.fileRules" -}}
{{- $text := .Files.Get "files/rbac/rules.yaml" -}}
{{- if not $text -}}
{{- fail "files/rbac/rules.yaml is missing or empty: it holds Loom's RBAC rules" -}}
{{- end -}}
{{- range $i, $rule := fromYamlArray $text -}}
{{- if not (and (kindIs "map" $rule) (hasKey $rule "verbs")) -}}
{{- fail (printf "files/rbac/rules.yaml: item %d is not a PolicyRule: %v" $i $rule) -}}
{{- end -}}
{{- end -}}
{{- $text -}}
{{- end -}}

{{/*
loom.clusterScoped lists the cluster-scoped resources a rule may name
(built-in kinds): with watchNamespace, only these are granted by a
ClusterRole.
*/}}
{{- define "loom.clusterScoped" -}}
{{- list "namespaces" "nodes" "persistentvolumes" "customresourcedefinitions" "clusterroles" "clusterrolebindings" "storageclasses" "priorityclasses" "ingressclasses" "runtimeclasses" "csidrivers" "csinodes" "volumeattachments" "validatingwebhookconfigurations" "mutatingwebhookconfigurations" "validatingadmissionpolicies" "validatingadmissionpolicybindings" "apiservices" "certificatesigningrequests" "flowschemas" "prioritylevelconfigurations" "templatesets" "templaterevisions" "subjectaccessreviews" | toJson -}}
{{- end -}}

{{/* loom.subjects binds a role to Loom's ServiceAccount. */}}
{{- define "loom.subjects" -}}
- kind: ServiceAccount
  name: {{ include "loom.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
