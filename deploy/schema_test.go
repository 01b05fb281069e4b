package deploy

import (
	"strings"
	"testing"
)

// TestSchemaRefusesBadValues renders the chart with values that
// values.schema.json must refuse, as `helm install` would, and checks that
// the error names the value. The last cases are refused by a template's
// fail instead, for what the schema cannot say plainly.
func TestSchemaRefusesBadValues(t *testing.T) {
	tests := []struct {
		name, values, want string
	}{
		{"unknown top-level value", "replica: 2", "replica"},
		{"unknown nested value", "image: {name: loom}", "name"},
		{"log format not in the enum", "logFormat: xml", "logFormat"},
		{"pull policy not in the enum", "image: {pullPolicy: Sometimes}", "pullPolicy"},
		{"digest that is not sha256", "image: {digest: 'md5:abc'}", "digest"},
		{"replicas as a string", "replicas: two", "replicas"},
		{"negative replicas", "replicas: -1", "replicas"},
		{"leader election as a string", "leaderElection: {enabled: 'yes'}", "enabled"},
		{"template set without a ConfigMap", "templateSets: [{name: a}]", "configMap"},
		{"template set name with a slash", "templateSets: [{name: a/b, configMap: c}]", "name"},
		{"template set name too long", "templateSets: [{name: " + strings.Repeat("a", 64) + ", configMap: c}]", "name"},
		{"the same template set twice", "templateSets: [{name: a, configMap: c}, {name: a, configMap: c}]", "templateSets"},
		{"watch namespace with capitals", "watchNamespace: Shop", "watchNamespace"},
		{"zero workers", "workers: 0", "workers"},
		{"reconcile timeout without a unit", "reconcileTimeout: '30'", "reconcileTimeout"},
		{"install CRDs as a string", "installCRDs: 'true'", "installCRDs"},
		{"extra arg that is not a flag", "extraArgs: [run]", "extraArgs"},
		{"extra env without a name", "extraEnv: [{value: x}]", "name"},
		{"memory that is not a quantity", "resources: {limits: {memory: lots}}", "memory"},
		{"seccomp type not in the enum", "securityContext: {seccompProfile: {type: Default}}", "type"},
		{"unknown securityContext field", "securityContext: {runAsRoot: true}", "runAsRoot"},
		{"token that expires too soon", "serviceAccount: {tokenExpirationSeconds: 60}", "tokenExpirationSeconds"},
		{"extra rule without verbs", "rbac: {extraRules: [{apiGroups: [''], resources: [pods]}]}", "verbs"},
		{"metrics port out of range", "metrics: {port: 70000}", "port"},
		{"service type not in the enum", "metrics: {service: {type: ExternalName}}", "type"},
		{"scrape interval that is not a duration", "metrics: {serviceMonitor: {interval: often}}", "interval"},
		{"dashboard label that is not a string", "dashboard: {labels: {grafana_dashboard: 1}}", "grafana_dashboard"},
		{"API server CIDR that is not one", "networkPolicy: {apiServer: {cidrs: [10.0.0.1]}}", "cidrs"},
		{"no API server port", "networkPolicy: {apiServer: {ports: []}}", "ports"},
		{"maxUnavailable as a word", "podDisruptionBudget: {maxUnavailable: one}", "maxUnavailable"},
		{"toleration operator not in the enum", "tolerations: [{key: a, operator: Is}]", "operator"},
		{"spread constraint without a topology key", "topologySpreadConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]", "topologyKey"},
		{"node selector value that is not a string", "nodeSelector: {disk: 1}", "disk"},
		{"unknown affinity", "affinity: {nodeAffinty: {}}", "nodeAffinty"},
		{"sharding as a string", "sharding: {enabled: 'yes'}", "enabled"},
		{"unknown sharding value", "sharding: {enabled: true, replicas: 3}", "replicas"},
		{"shard group that is not a label value", "sharding: {group: Loom_A}", "group"},
		{"shard group too long", "sharding: {group: " + strings.Repeat("a", 64) + "}", "group"},
		{"lease duration without a unit", "sharding: {leaseDuration: '6'}", "leaseDuration"},
		{"renew interval that is not a duration", "sharding: {renewInterval: 2 seconds}", "renewInterval"},
		{"lease duration as a number", "sharding: {leaseDuration: 6}", "leaseDuration"},
		{"sharding with leader election on", "{sharding: {enabled: true}, leaderElection: {enabled: true}}", "sharding.enabled and leaderElection.enabled exclude each other"},
	}
	ch := loadChart(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(ch, testRelease, readValues(t, tt.values))
			if err == nil {
				t.Fatalf("values %s accepted", tt.values)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not name %q: %v", tt.want, err)
			}
		})
	}
}
