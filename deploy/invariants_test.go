package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/yaml"
)

// appVersion is the chart's appVersion, which the Deployment and its pods
// carry as app.kubernetes.io/version.
const appVersion = "0.1.0"

// tokenPath is where client-go's in-cluster config reads the token, the CA
// and the namespace.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// checkInvariants checks what every render must have: the standard labels,
// restricted pod security on every container, no automounted token but a
// projected one where client-go looks, and each template set mounted whole
// from its ConfigMap.
func checkInvariants(t *testing.T, r rendered) {
	t.Helper()
	for key, o := range r.objects {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by", "app.kubernetes.io/component"} {
			if m.GetLabels()[l] == "" {
				t.Errorf("%s has no label %s", key, l)
			}
		}
		if sa, ok := o.(*corev1.ServiceAccount); ok && (sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken) {
			t.Errorf("ServiceAccount %s automounts its token", sa.Name)
		}
	}
	d := r.deployment(t)
	for what, labels := range map[string]map[string]string{"Deployment": d.Labels, "pod template": d.Spec.Template.Labels} {
		if labels["app.kubernetes.io/name"] != "loom" || labels["app.kubernetes.io/version"] != appVersion {
			t.Errorf("%s labels %v: want app.kubernetes.io/name loom and version %s", what, labels, appVersion)
		}
	}
	checkRestricted(t, d)
	checkToken(t, d)
	checkTemplateVolumes(t, d)
}

// checkRestricted checks the restricted Pod Security Standard's fields on
// the pod and on every container.
func checkRestricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.RunAsGroup == nil || *psc.RunAsGroup != 65532 || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, user and group 65532, seccomp RuntimeDefault", psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the pod automounts the ServiceAccount token")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("the pod shares a host namespace")
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("container %s has no securityContext", c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("container %s: readOnlyRootFilesystem is not true", c.Name)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			t.Errorf("container %s: capabilities %+v, want drop [ALL] and no add", c.Name, sc.Capabilities)
		case sc.Privileged != nil && *sc.Privileged:
			t.Errorf("container %s is privileged", c.Name)
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
			t.Errorf("container %s: runAsNonRoot is not true", c.Name)
		case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("container %s: seccompProfile %+v", c.Name, sc.SeccompProfile)
		}
	}
}

// checkToken checks the projected volume that stands in for the automounted
// token: an expiring token, the cluster's CA and the namespace.
func checkToken(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	var name string
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.MountPath == tokenPath {
			name = m.Name
		}
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if name == "" || i < 0 || spec.Volumes[i].Projected == nil {
		t.Fatalf("nothing projected at %s: %+v", tokenPath, spec.Volumes)
	}
	var token, ca, ns bool
	for _, s := range spec.Volumes[i].Projected.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			e := s.ServiceAccountToken.ExpirationSeconds
			token = s.ServiceAccountToken.Path == "token" && e != nil && *e >= 600
		case s.ConfigMap != nil:
			ca = s.ConfigMap.Name == "kube-root-ca.crt" && len(s.ConfigMap.Items) == 1 && s.ConfigMap.Items[0].Path == "ca.crt"
		case s.DownwardAPI != nil:
			ns = len(s.DownwardAPI.Items) == 1 && s.DownwardAPI.Items[0].Path == "namespace" &&
				s.DownwardAPI.Items[0].FieldRef != nil && s.DownwardAPI.Items[0].FieldRef.FieldPath == "metadata.namespace"
		}
	}
	if !token || !ca || !ns {
		t.Errorf("projected volume %s: token %v, ca.crt %v, namespace %v", name, token, ca, ns)
	}
}

// checkTemplateVolumes checks that every mount under /templates is a whole
// ConfigMap (no subPath, or the kubelet's symlink swap never reaches Loom),
// and that the pod has no writable volume (a Secret's, cert-manager's
// webhook certificate, is read-only too).
func checkTemplateVolumes(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	configMaps := 0
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			configMaps++
		}
		if v.Projected == nil && v.ConfigMap == nil && v.Secret == nil {
			t.Errorf("volume %s is neither projected, a ConfigMap nor a Secret: %+v", v.Name, v.VolumeSource)
		}
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" || !m.ReadOnly {
			t.Errorf("mount %s: subPath %q, readOnly %v", m.MountPath, m.SubPath, m.ReadOnly)
		}
	}
	if got := len(templateVolumes(d)); got != configMaps {
		t.Errorf("%d template-set mounts for %d ConfigMap volumes", got, configMaps)
	}
}

// templateVolumes maps each mount under /templates/ to its ConfigMap.
func templateVolumes(d *appsv1.Deployment) map[string]string {
	spec := d.Spec.Template.Spec
	out := map[string]string{}
	for _, m := range spec.Containers[0].VolumeMounts {
		if !strings.HasPrefix(m.MountPath, "/templates/") {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				out[m.MountPath] = v.ConfigMap.Name
			}
		}
	}
	return out
}

// checkNetworkPolicy checks the policy: Loom's pods, ingress only on the
// metrics port, egress only to the API server's ports and DNS.
func checkNetworkPolicy(t *testing.T, r rendered) {
	t.Helper()
	np := r.objects["NetworkPolicy/loom"].(*networkingv1.NetworkPolicy)
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress", "Egress"}) {
		t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
	}
	var in []string
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			in = append(in, p.Port.String())
		}
	}
	if want := []string{"metrics", "webhook"}; !slices.Equal(in, want) || len(np.Spec.Ingress[1].From) != 0 {
		t.Errorf("ingress %+v: want the metrics port, and the webhook's from anywhere (the API server)", np.Spec.Ingress)
	}
	var ports []string
	for _, e := range np.Spec.Egress {
		for _, p := range e.Ports {
			ports = append(ports, string(*p.Protocol)+"/"+p.Port.String())
		}
	}
	if want := []string{"TCP/6443", "UDP/53", "TCP/53"}; !slices.Equal(ports, want) {
		t.Errorf("egress ports %v, want %v", ports, want)
	}
	if to := np.Spec.Egress[0].To; len(to) != 1 || to[0].IPBlock == nil || to[0].IPBlock.CIDR != "10.0.0.1/32" {
		t.Errorf("egress to the API server: %+v", to)
	}
	d := r.deployment(t)
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the policy selects %s=%s, which Loom's pods do not have", k, v)
		}
	}
}

// fileRules reads files/rbac/rules.yaml.
func fileRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("chart", "files", "rbac", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	if err := yaml.UnmarshalStrict(b, &rules); err != nil {
		t.Fatalf("files/rbac/rules.yaml: %v", err)
	}
	return rules
}

// resources lists the resources rules name.
func resources(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Resources...)
	}
	return out
}

// hasVerb reports whether a rule grants verb on resource.
func hasVerb(rules []rbacv1.PolicyRule, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}
