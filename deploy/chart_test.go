package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// sampleDashboard and sampleAlerts stand in for files/dashboards/loom.json
// and files/alerts/loom-rules.yaml, which another branch adds.
const (
	sampleDashboard = `{"title": "Loom", "panels": []}`
	sampleAlerts    = `groups:
  - name: loom
    rules:
      - alert: LoomReconcileErrors
        expr: sum(rate(loom_reconcile_total{result="error"}[5m])) > 0
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: Loom fails to reconcile parents.
`
)

// TestRender renders the chart with value sets and checks what each
// makes, beside the properties every render must have (checkInvariants).
func TestRender(t *testing.T) {
	withFiles := map[string]string{"files/dashboards/loom.json": sampleDashboard, "files/alerts/loom-rules.yaml": sampleAlerts}
	tests := []struct {
		name   string
		values string
		files  map[string]string
		// kinds is how many objects of each kind render.
		kinds map[string]int
		// args must be among the container's args; noArgs must not (by
		// prefix).
		args, noArgs []string
		check        func(t *testing.T, r rendered)
	}{{
		name:   "defaults",
		values: "{}",
		// Roles, RoleBindings: leader election's and the webhook Secret's;
		// Services: the metrics' and the webhook's.
		kinds: map[string]int{"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Role": 2, "RoleBinding": 2,
			"Service": 2, "Deployment": 1, "PodDisruptionBudget": 1},
		args: []string{"run", "--templates=/templates", "--leader-elect", "--leader-election-namespace=ops", "--leader-election-id=loom", "--reconcile-timeout=30s", "--workers=8", "--metrics-bind-address=:8080",
			"--webhook-bind-address=:9443", "--webhook-service=ops/loom-webhook", "--webhook-cert-secret=loom-webhook-tls"},
		noArgs: []string{"--namespace", "--install-crds", "--log-format", "-v"},
		check: func(t *testing.T, r rendered) {
			d := r.deployment(t)
			if got := d.Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/loom-operator/loom:0.1.0" {
				t.Errorf("image %s, want the appVersion's tag", got)
			}
			role := r.objects["Role/loom-leader-election"].(*rbacv1.Role)
			if role.Namespace != "ops" || role.Rules[0].Resources[0] != "leases" {
				t.Errorf("leader-election Role: %+v", role)
			}
			cr := r.objects["ClusterRole/loom"].(*rbacv1.ClusterRole)
			if want := fileRules(t); !cmp.Equal(want, cr.Rules) {
				t.Errorf("ClusterRole rules are not files/rbac/rules.yaml (-want +got):\n%s", cmp.Diff(want, cr.Rules))
			}
		},
	}, {
		name:   "one replica: leader election all the same (an upgrade runs a second pod)",
		values: "replicas: 1",
		kinds:  map[string]int{"Role": 2, "RoleBinding": 2, "ClusterRole": 1},
		args:   []string{"--leader-elect", "--leader-election-namespace=ops", "--leader-election-id=loom"},
	}, {
		name:   "one replica, leader election asked for",
		values: "{replicas: 1, leaderElection: {enabled: true}}",
		kinds:  map[string]int{"Role": 2, "RoleBinding": 2},
		args:   []string{"--leader-elect"},
	}, {
		name:   "three replicas, leader election off",
		values: "{replicas: 3, leaderElection: {enabled: false}}",
		kinds:  map[string]int{"Role": 1}, // the webhook Secret's
		noArgs: []string{"--leader-elect"},
		check: func(t *testing.T, r rendered) {
			if _, ok := r.objects["Role/loom-leader-election"]; ok {
				t.Error("a leader-election Role without leader election")
			}
		},
	}, {
		name:   "sharded: no leader election, POD_NAME, the group's Leases",
		values: "sharding: {enabled: true}",
		kinds:  map[string]int{"Role": 2, "RoleBinding": 2, "ClusterRole": 1, "PodDisruptionBudget": 1},
		args:   []string{"--sharded", "--shard-namespace=ops", "--shard-group=loom"},
		noArgs: []string{"--leader-elect", "--leader-election-namespace", "--leader-election-id", "--shard-lease-duration", "--shard-renew-interval"},
		check: func(t *testing.T, r rendered) {
			if d := r.deployment(t); *d.Spec.Replicas != 2 {
				t.Errorf("%d replicas, want the default 2", *d.Spec.Replicas)
			}
			checkShardEnv(t, r, "POD_NAME")
			checkShardRole(t, r, "loom-sharding")
		},
	}, {
		name:   "sharded, three replicas, a group and durations of its own, more env",
		values: "{replicas: 3, sharding: {enabled: true, group: shop, leaseDuration: 10s, renewInterval: 3s}, extraEnv: [{name: GOGC, value: '75'}]}",
		kinds:  map[string]int{"Role": 2, "RoleBinding": 2},
		args:   []string{"--sharded", "--shard-group=shop", "--shard-lease-duration=10s", "--shard-renew-interval=3s"},
		noArgs: []string{"--leader-elect"},
		check: func(t *testing.T, r rendered) {
			if d := r.deployment(t); *d.Spec.Replicas != 3 {
				t.Errorf("%d replicas, want 3", *d.Spec.Replicas)
			}
			checkShardEnv(t, r, "POD_NAME", "GOGC")
			checkShardRole(t, r, "loom-sharding")
		},
	}, {
		name:   "sharded, leader election off as well, and a fullname of its own",
		values: "{fullnameOverride: loom-a, sharding: {enabled: true}, leaderElection: {enabled: false}}",
		kinds:  map[string]int{"Role": 2, "RoleBinding": 2},
		args:   []string{"--sharded", "--shard-group=loom-a"},
		noArgs: []string{"--leader-elect"},
		check: func(t *testing.T, r rendered) {
			checkShardRole(t, r, "loom-a-sharding")
		},
	}, {
		name:   "sharding off, its durations set: nothing of it",
		values: "{replicas: 1, sharding: {enabled: false, leaseDuration: 10s}}",
		kinds:  map[string]int{"Role": 2, "RoleBinding": 2}, // leader election's, the webhook Secret's
		noArgs: []string{"--sharded", "--shard-namespace", "--shard-group", "--shard-lease-duration"},
		check: func(t *testing.T, r rendered) {
			if env := r.deployment(t).Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
				t.Errorf("env %+v, want none", env)
			}
		},
	}, {
		name:   "one namespace watched: Roles there, a ClusterRole for cluster-scoped kinds only",
		values: "{watchNamespace: shop, replicas: 1, installCRDs: true, rbac: {extraRules: [{apiGroups: [''], resources: [secrets, persistentvolumes], verbs: [get]}]}}",
		kinds:  map[string]int{"Role": 3, "RoleBinding": 3, "ClusterRole": 1, "ClusterRoleBinding": 1}, // and leader election's, the webhook Secret's
		args:   []string{"--namespace=shop", "--install-crds"},
		check: func(t *testing.T, r rendered) {
			role := r.objects["Role/loom"].(*rbacv1.Role)
			cr := r.objects["ClusterRole/loom"].(*rbacv1.ClusterRole)
			if role.Namespace != "shop" {
				t.Errorf("Role in %q, want shop", role.Namespace)
			}
			if rb := r.objects["RoleBinding/loom"].(*rbacv1.RoleBinding); rb.Namespace != "shop" || rb.Subjects[0].Namespace != "ops" {
				t.Errorf("RoleBinding: %+v", rb)
			}
			namespaced, cluster := resources(role.Rules), resources(cr.Rules)
			for _, want := range []string{"myresources", "myresources/status", "configmaps", "deployments", "events", "secrets"} {
				if !slices.Contains(namespaced, want) || slices.Contains(cluster, want) {
					t.Errorf("%s: want it in the Role only; Role %v, ClusterRole %v", want, namespaced, cluster)
				}
			}
			for _, want := range []string{"customresourcedefinitions", "persistentvolumes"} {
				if slices.Contains(namespaced, want) || !slices.Contains(cluster, want) {
					t.Errorf("%s: want it in the ClusterRole only; Role %v, ClusterRole %v", want, namespaced, cluster)
				}
			}
			if !hasVerb(cr.Rules, "customresourcedefinitions", "create") {
				t.Errorf("--install-crds without create on CRDs: %+v", cr.Rules)
			}
		},
	}, {
		name:   "install CRDs, cluster-wide",
		values: "installCRDs: true",
		args:   []string{"--install-crds"},
		check: func(t *testing.T, r rendered) {
			cr := r.objects["ClusterRole/loom"].(*rbacv1.ClusterRole)
			if !hasVerb(cr.Rules, "customresourcedefinitions", "patch") {
				t.Errorf("--install-crds without patch on CRDs: %+v", cr.Rules)
			}
		},
	}, {
		name:   "extra rules are added to the ClusterRole",
		values: "{rbac: {extraRules: [{apiGroups: [shop.example.com], resources: [shops], verbs: [get, list, watch, patch]}]}}",
		check: func(t *testing.T, r rendered) {
			cr := r.objects["ClusterRole/loom"].(*rbacv1.ClusterRole)
			if !hasVerb(cr.Rules, "shops", "watch") || len(cr.Rules) != len(fileRules(t))+1 {
				t.Errorf("extra rule missing: %+v", cr.Rules)
			}
		},
	}, {
		name:   "three template sets",
		values: "templateSets: [{name: a, configMap: cm-a}, {name: b, configMap: cm-b}, {name: c, configMap: cm-c}]",
		check: func(t *testing.T, r rendered) {
			if got := templateVolumes(r.deployment(t)); !cmp.Equal(got, map[string]string{"/templates/a": "cm-a", "/templates/b": "cm-b", "/templates/c": "cm-c"}) {
				t.Errorf("template volumes %v", got)
			}
		},
	}, {
		name:   "no template sets",
		values: "templateSets: []",
		check: func(t *testing.T, r rendered) {
			if got := templateVolumes(r.deployment(t)); len(got) != 0 {
				t.Errorf("template volumes %v, want none", got)
			}
		},
	}, {
		name:   "json logs, verbosity, extra args and env",
		values: "{logFormat: json, verbosity: 2, extraArgs: [--resync-period=5m], extraEnv: [{name: GOGC, value: '75'}]}",
		args:   []string{"--log-format=json", "-v=2", "--resync-period=5m"},
		check: func(t *testing.T, r rendered) {
			if env := r.deployment(t).Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "GOGC" {
				t.Errorf("env %+v", env)
			}
		},
	}, {
		name:   "image pinned by digest",
		values: "image: {digest: 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', tag: dev}",
		check: func(t *testing.T, r rendered) {
			if got := r.deployment(t).Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/loom-operator/loom@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
				t.Errorf("image %s", got)
			}
		},
	}, {
		name:   "no PDB, no metrics Service, no webhook",
		values: "{podDisruptionBudget: {enabled: false}, metrics: {service: {enabled: false}}, webhook: {enabled: false}}",
		kinds:  map[string]int{"PodDisruptionBudget": 0, "Service": 0, "Role": 1},
		args:   []string{"--webhook-bind-address=0"},
		noArgs: []string{"--webhook-service", "--webhook-cert-secret"},
		check: func(t *testing.T, r rendered) {
			for _, p := range r.deployment(t).Spec.Template.Spec.Containers[0].Ports {
				if p.Name == "webhook" {
					t.Errorf("a webhook port without the webhook")
				}
			}
		},
	}, {
		name:   "the webhook's certificate by cert-manager, self-signed",
		values: "webhook: {certManager: {enabled: true, duration: 2160h}}",
		kinds:  map[string]int{"Issuer": 1, "Certificate": 1, "Role": 1, "Service": 2},
		args:   []string{"--webhook-cert-dir=/webhook-certs", "--webhook-cainjector-certificate=ops/loom-webhook", "--webhook-service=ops/loom-webhook"},
		noArgs: []string{"--webhook-cert-secret", "--webhook-ca-lifetime"},
		check: func(t *testing.T, r rendered) {
			var c struct {
				Spec struct {
					SecretName string            `json:"secretName"`
					DNSNames   []string          `json:"dnsNames"`
					Duration   string            `json:"duration"`
					IssuerRef  map[string]string `json:"issuerRef"`
				}
			}
			if err := yaml.Unmarshal([]byte(r.doc(t, "Certificate", "loom-webhook").Content), &c); err != nil {
				t.Fatal(err)
			}
			want := []string{"loom-webhook.ops.svc", "loom-webhook.ops.svc.cluster.local"}
			if c.Spec.SecretName != "loom-webhook-tls" || !cmp.Equal(c.Spec.DNSNames, want) || c.Spec.Duration != "2160h" || c.Spec.IssuerRef["name"] != "loom-webhook" {
				t.Errorf("Certificate spec %+v", c.Spec)
			}
			if got := secretVolume(r.deployment(t), "webhook-certs"); got != "loom-webhook-tls" {
				t.Errorf("webhook-certs volume of Secret %q, want loom-webhook-tls", got)
			}
		},
	}, {
		name:   "the webhook's certificate by cert-manager, from an issuer of one's own; lifetimes are cert-manager's",
		values: "webhook: {certManager: {enabled: true, issuerRef: {name: corp-ca, kind: ClusterIssuer}}, caLifetime: 1h}",
		kinds:  map[string]int{"Issuer": 0, "Certificate": 1},
		noArgs: []string{"--webhook-ca-lifetime"},
	}, {
		name:   "the webhook on another port, with lifetimes and a timeout",
		values: "webhook: {port: 10443, caLifetime: 720h, certLifetime: 240h, timeout: 5s}",
		args:   []string{"--webhook-bind-address=:10443", "--webhook-ca-lifetime=720h", "--webhook-cert-lifetime=240h", "--webhook-timeout=5s"},
	}, {
		name:   "network policy",
		values: "networkPolicy: {enabled: true, apiServer: {ports: [6443], cidrs: [10.0.0.1/32]}}",
		kinds:  map[string]int{"NetworkPolicy": 1},
		check:  checkNetworkPolicy,
	}, {
		name:   "dashboard and alerts on, their files absent: nothing",
		values: "{dashboard: {enabled: true}, alerts: {enabled: true}}",
		files:  map[string]string{"files/dashboards/loom.json": "", "files/alerts/loom-rules.yaml": "\n"},
		kinds:  map[string]int{"ConfigMap": 0, "PrometheusRule": 0},
	}, {
		name:   "dashboard and alerts on, with their files",
		values: "{dashboard: {enabled: true}, alerts: {enabled: true}}",
		files:  withFiles,
		kinds:  map[string]int{"ConfigMap": 1, "PrometheusRule": 1},
		check: func(t *testing.T, r rendered) {
			cm := r.objects["ConfigMap/loom-dashboard"].(*corev1.ConfigMap)
			if cm.Labels["grafana_dashboard"] != "1" || cm.Data["loom.json"] != sampleDashboard {
				t.Errorf("dashboard ConfigMap: %+v", cm)
			}
			var rule struct{ Spec map[string]any }
			if err := yaml.Unmarshal([]byte(r.doc(t, "PrometheusRule", "loom").Content), &rule); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := yaml.Unmarshal([]byte(sampleAlerts), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, rule.Spec); diff != "" {
				t.Errorf("PrometheusRule spec is not the file (-want +got):\n%s", diff)
			}
		},
	}, {
		name:   "dashboard and alerts off, with their files",
		values: "{}",
		files:  withFiles,
		kinds:  map[string]int{"ConfigMap": 0, "PrometheusRule": 0},
	}, {
		name:   "everything on",
		values: allOnValues,
		files:  withFiles,
		kinds: map[string]int{"Namespace": 1, "NetworkPolicy": 1, "ServiceMonitor": 1, "PrometheusRule": 1, "ConfigMap": 1,
			"PodDisruptionBudget": 1, "ClusterRole": 1, "Role": 3, "RoleBinding": 3},
		args: []string{"--namespace=team-a", "--install-crds", "--log-format=json", "--leader-elect", "--leader-election-id=loom-all"},
		check: func(t *testing.T, r rendered) {
			ns := r.objects["Namespace/ops"].(*corev1.Namespace)
			for _, mode := range []string{"enforce", "warn", "audit"} {
				if ns.Labels["pod-security.kubernetes.io/"+mode] != "restricted" {
					t.Errorf("Namespace labels %v: want %s restricted", ns.Labels, mode)
				}
			}
			spec := r.deployment(t).Spec.Template.Spec
			if spec.PriorityClassName == "" || len(spec.TopologySpreadConstraints) != 1 || spec.TopologySpreadConstraints[0].LabelSelector == nil ||
				len(spec.Tolerations) != 1 || spec.Affinity == nil || len(spec.NodeSelector) != 1 || len(spec.ImagePullSecrets) != 1 {
				t.Errorf("scheduling fields missing: %+v", spec)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, loadChart(t, tt.files), readValues(t, tt.values))
			checkInvariants(t, r)
			kinds := r.kinds()
			for kind, n := range tt.kinds {
				if kinds[kind] != n {
					t.Errorf("%d %s rendered, want %d (all: %v)", kinds[kind], kind, n, kinds)
				}
			}
			args := r.deployment(t).Spec.Template.Spec.Containers[0].Args
			for _, a := range tt.args {
				if !slices.Contains(args, a) {
					t.Errorf("args %v lack %s", args, a)
				}
			}
			for _, a := range tt.noArgs {
				if i := slices.IndexFunc(args, func(s string) bool { return s == a || strings.HasPrefix(s, a+"=") }); i >= 0 {
					t.Errorf("args %v have %s", args, args[i])
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// checkShardEnv checks the container's env names, in order, and that
// POD_NAME comes from the pod's name, which --shard-id-prefix defaults to.
func checkShardEnv(t *testing.T, r rendered, names ...string) {
	t.Helper()
	env := r.deployment(t).Spec.Template.Spec.Containers[0].Env
	var got []string
	for _, e := range env {
		got = append(got, e.Name)
	}
	if diff := cmp.Diff(names, got); diff != "" {
		t.Fatalf("env names (-want +got):\n%s", diff)
	}
	if from := env[0].ValueFrom; env[0].Value != "" || from == nil || from.FieldRef == nil || from.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME is not the pod's name: %+v", env[0])
	}
}

// checkShardRole checks the sharding Role and its binding in the release
// namespace: the Leases with loom run --sharded's verbs (TestChartLeaseRules
// compares them with loom rbac's), bound to Loom's ServiceAccount.
func checkShardRole(t *testing.T, r rendered, name string) {
	t.Helper()
	role, ok := r.objects["Role/"+name].(*rbacv1.Role)
	if !ok {
		t.Fatalf("no Role %s: %v", name, r.kinds())
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		Verbs: []string{"get", "list", "watch", "create", "update", "delete"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" || role.Namespace != testRelease.Namespace {
		t.Errorf("Role %s in %q, want %q; rules (-want +got):\n%s", name, role.Namespace, testRelease.Namespace, diff)
	}
	rb, ok := r.objects["RoleBinding/"+name].(*rbacv1.RoleBinding)
	if !ok {
		t.Fatalf("no RoleBinding %s", name)
	}
	sa := r.deployment(t).Spec.Template.Spec.ServiceAccountName
	if rb.Namespace != testRelease.Namespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != name ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa || rb.Subjects[0].Namespace != testRelease.Namespace {
		t.Errorf("RoleBinding %s: %+v, want Role %s bound to ServiceAccount %s/%s", name, rb, name, testRelease.Namespace, sa)
	}
}

// secretVolume is the Secret of the Deployment's volume named name, or "".
func secretVolume(d *appsv1.Deployment, name string) string {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}
