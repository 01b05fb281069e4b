//go:build e2e

package e2e

// A chart set (loom.yaml's chart:) on the cluster: an unmodified Helm
// chart's children are applied with Loom's promises: Ready in status,
// drift repaired, silent at steady state, values edits applied, cluster-
// scoped children deleted with the parent and never taken over.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

var (
	chartAppGVR = schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: "chartapps"}
	jobGVR      = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// chartSetFiles is a set over a chart written for this test, the shape of
// a typical application chart: helpers, a pre-install Job, a
// ServiceAccount, a Deployment, a Service, and a ClusterRole with its
// binding (named after the release, unless values.clusterRoleName says
// otherwise).
var chartSetFiles = map[string]string{
	"loom.yaml": `parent:
  apiVersion: charts.e2e.loom.dev/v1
  kind: ChartApp
chart: chart
notes: true
clusterScoped:
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding}
`,
	"chart/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\nappVersion: \"1.0\"\n",
	"chart/values.yaml": `replicaCount: 1
image: {repository: nginx, tag: "1.27"}
service: {port: 80}
clusterRoleName: ""
`,
	"chart/templates/_helpers.tpl": `{{- define "shop.fullname" -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end }}
{{- define "shop.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
{{- define "shop.role" -}}{{ default (printf "loom-e2e-%s-%s" .Release.Namespace (include "shop.fullname" .)) .Values.clusterRoleName }}{{- end }}
`,
	"chart/templates/serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "shop.fullname" . }}
  labels: {{- include "shop.labels" . | nindent 4 }}
`,
	"chart/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shop.fullname" . }}
  labels: {{- include "shop.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      serviceAccountName: {{ include "shop.fullname" . }}
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
	"chart/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "shop.fullname" . }}
  labels: {{- include "shop.labels" . | nindent 4 }}
spec:
  ports:
    - port: {{ .Values.service.port }}
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
`,
	"chart/templates/clusterrole.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "shop.role" . }}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "shop.role" . }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ include "shop.role" . }}}
subjects:
  - kind: ServiceAccount
    name: {{ include "shop.fullname" . }}
    namespace: {{ .Release.Namespace }}
`,
	"chart/templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
	"chart/templates/capabilities.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "shop.fullname" . }}-capabilities
data:
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  servesChartApps: {{ .Capabilities.APIVersions.Has "charts.e2e.loom.dev/v1/ChartApp" | quote }}
`,
	"chart/crds/gadgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.charts.e2e.loom.dev
spec:
  group: charts.e2e.loom.dev
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
	"chart/templates/gadget.yaml": `apiVersion: charts.e2e.loom.dev/v1
kind: Gadget
metadata:
  name: {{ include "shop.fullname" . }}
spec:
  size: {{ .Values.replicaCount }}
`,
	"chart/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "shop.fullname" . }}-migrate
  annotations:
    helm.sh/hook: pre-install
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox
`,
}

func createChartApp(t *testing.T, ns, name, spec string) *unstructured.Unstructured {
	t.Helper()
	return createObject(t, chartAppGVR, ns, fmt.Sprintf("apiVersion: charts.e2e.loom.dev/v1\nkind: ChartApp\nmetadata:\n  name: %s\nspec: %s\n", name, spec))
}

func TestChartSet(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	role := "loom-e2e-" + ns + "-a-shop"
	deleteClusterObjects(t, role, "loom-e2e-shared")
	t.Cleanup(func() {
		_ = e.Dyn.Resource(crdGVR).Delete(context.Background(), "gadgets.charts.e2e.loom.dev", metav1.DeleteOptions{})
	})
	l := newChartSet(t, "shop", chartSetFiles, chartAppGVR).start(t, ns, loomOptions{})
	createChartApp(t, ns, "a", `{replicaCount: 2}`)
	waitConditionGVR(t, chartAppGVR, ns, "a", "Ready", "True")

	// Every child is there, with the chart's labels and Loom's.
	for _, c := range []struct {
		gvr      schema.GroupVersionResource
		ns, name string
	}{
		{serviceAccountGVR, ns, "a-shop"}, {deployGVR, ns, "a-shop"}, {serviceGVR, ns, "a-shop"},
		{clusterRoleGVR, "", role}, {clusterRoleBindingGVR, "", role},
	} {
		obj, err := e.Get(context.Background(), c.gvr, c.ns, c.name)
		if err != nil {
			t.Fatalf("%s %s: %v", c.gvr.Resource, c.name, err)
		}
		if got := obj.GetLabels()["app.kubernetes.io/managed-by"]; got != "loom" {
			t.Errorf("%s %s: managed-by %q, want loom (.Release.Service)", c.gvr.Resource, c.name, got)
		}
	}
	d, _ := e.Get(context.Background(), deployGVR, ns, "a-shop")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d, want the parent's 2", r)
	}
	// The chart's crds/ were installed, and its Gadget applied.
	gadgetGVR := schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: "gadgets"}
	if g, err := e.Get(context.Background(), gadgetGVR, ns, "a-shop"); err != nil {
		t.Errorf("the chart's Gadget: %v", err)
	} else if size, _, _ := unstructured.NestedInt64(g.Object, "spec", "size"); size != 2 {
		t.Errorf("Gadget spec.size %d, want 2", size)
	}
	// The chart's NOTES.txt is in the parent's status.
	pa, err := e.Get(context.Background(), chartAppGVR, ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	if notes, _, _ := unstructured.NestedString(pa.Object, "status", "notes"); notes != "Installed a.\n" {
		t.Errorf("status.notes %q, want the chart's NOTES.txt", notes)
	}
	// .Capabilities are the cluster's: its version, and the API versions
	// it serves (the parent's own CRD among them).
	cm, err := e.Get(context.Background(), configMapGVR, ns, "a-shop-capabilities")
	if err != nil {
		t.Fatal(err)
	}
	server, err := e.Kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["kubeVersion"] != server.GitVersion || data["servesChartApps"] != "true" {
		t.Errorf(".Capabilities: %v, want the server's version %s and its ChartApp API", data, server.GitVersion)
	}
	// The pre-install hook's Job completed before the Deployment was
	// created.
	job, err := e.Get(context.Background(), jobGVR, ns, "a-shop-migrate")
	if err != nil {
		t.Fatal(err)
	}
	// (A chart's Job is ready when Complete, whose time is completionTime;
	// kstatus alone would call it ready once started.)
	done, _, _ := unstructured.NestedString(job.Object, "status", "completionTime")
	completed, err := time.Parse(time.RFC3339, done)
	if err != nil {
		t.Fatalf("the pre-install Job has not succeeded (status %v): %v", job.Object["status"], err)
	}
	if created := d.GetCreationTimestamp().Time; created.Before(completed) {
		t.Errorf("the Deployment was created at %s, before the pre-install Job completed at %s", created, completed)
	}

	// Steady state: nothing is written for 30 s.
	quiesce(t, 2*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) })
	l.writes.reset()
	time.Sleep(30 * time.Second)
	if n, reqs := l.writes.snapshot(); n != 0 {
		t.Errorf("%d writes at steady state: %v", n, reqs)
	}

	// Drift is repaired.
	patchObject(t, deployGVR, ns, "a-shop", `{"spec":{"replicas":5}}`)
	eventually(t, 30*time.Second, "the Deployment's replicas are repaired", func(ctx context.Context) error {
		d, err := e.Get(ctx, deployGVR, ns, "a-shop")
		if err != nil {
			return err
		}
		if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
			return fmt.Errorf("replicas %d", r)
		}
		return nil
	})

	// A values edit reaches the children.
	patchObject(t, chartAppGVR, ns, "a", `{"spec":{"replicaCount":3,"image":{"tag":"1.28"}}}`)
	eventually(t, 30*time.Second, "the values edit is applied", func(ctx context.Context) error {
		d, err := e.Get(ctx, deployGVR, ns, "a-shop")
		if err != nil {
			return err
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if r != 3 || len(cs) != 1 || cs[0].(map[string]any)["image"] != "nginx:1.28" {
			return fmt.Errorf("replicas %d, containers %v", r, cs)
		}
		return nil
	})

	// A second parent whose chart renders the same ClusterRole name is
	// refused, and the first keeps it.
	patchObject(t, chartAppGVR, ns, "a", `{"spec":{"clusterRoleName":"loom-e2e-shared"}}`)
	waitConditionGVR(t, chartAppGVR, ns, "a", "Ready", "True")
	waitGone(t, clusterRoleGVR, "", role, "it stopped rendering")
	createChartApp(t, ns, "b", `{clusterRoleName: loom-e2e-shared}`)
	waitDegraded(t, chartAppGVR, ns, "b", "ApplyFailed", "loom-e2e-shared")
	shared, err := e.Get(context.Background(), clusterRoleGVR, "", "loom-e2e-shared")
	if err != nil {
		t.Fatal(err)
	}
	pa, _ = e.Get(context.Background(), chartAppGVR, ns, "a")
	want := fmt.Sprintf("charts.e2e.loom.dev/v1/ChartApp/%s/a/%s", ns, pa.GetUID())
	if got := shared.GetAnnotations()["loom.dev/owner"]; got != want {
		t.Errorf("shared ClusterRole's owner %q, want %q (the first parent's)", got, want)
	}

	// Deleting the parent deletes its cluster-scoped children.
	if err := e.Dyn.Resource(chartAppGVR).Namespace(ns).Delete(context.Background(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Dyn.Resource(chartAppGVR).Namespace(ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, clusterRoleGVR, "", "loom-e2e-shared", "its parent was deleted")
	waitGone(t, clusterRoleBindingGVR, "", "loom-e2e-shared", "its parent was deleted")
	waitGone(t, chartAppGVR, ns, "a", "the finalizer is removed")
}

// randomChartFiles is a set over a chart that makes its database password
// with randAlphaNum unless the Secret exists already (the common lookup
// pattern), and a replication key with randAlphaNum always.
var randomChartFiles = map[string]string{
	"loom.yaml": `parent:
  apiVersion: charts.e2e.loom.dev/v1
  kind: RandomApp
chart: chart
lookups:
  - {apiVersion: v1, kind: Secret}
`,
	"chart/Chart.yaml":  "apiVersion: v2\nname: db\nversion: 0.1.0\n",
	"chart/values.yaml": "auth: {password: \"\"}\n",
	"chart/templates/secret.yaml": `{{- $existing := lookup "v1" "Secret" .Release.Namespace (printf "%s-auth" .Release.Name) }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-auth
data:
  {{- if .Values.auth.password }}
  password: {{ .Values.auth.password | b64enc | quote }}
  {{- else if $existing }}
  password: {{ index $existing.data "password" }}
  {{- else }}
  password: {{ randAlphaNum 24 | b64enc | quote }}
  {{- end }}
  replication: {{ randAlphaNum 24 | b64enc | quote }}
`,
}

// A chart's random values are the parent's: each parent gets its own, and
// they survive a SIGKILL of Loom and a new process with no write.
func TestChartRandomValuesSurviveARestart(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	gvr := schema.GroupVersionResource{Group: "charts.e2e.loom.dev", Version: "v1", Resource: "randomapps"}
	set := newChartSet(t, "db", randomChartFiles, gvr)
	first := set.startProcess(t, ns)
	for _, name := range []string{"a", "b"} {
		createObject(t, gvr, ns, fmt.Sprintf("apiVersion: charts.e2e.loom.dev/v1\nkind: RandomApp\nmetadata:\n  name: %s\nspec: {}\n", name))
	}
	waitConditionGVR(t, gvr, ns, "a", "Ready", "True")
	waitConditionGVR(t, gvr, ns, "b", "Ready", "True")
	secret := func(name string) *unstructured.Unstructured {
		s, err := e.Get(context.Background(), secretGVR, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := secret("a-auth"), secret("b-auth")
	pw := func(s *unstructured.Unstructured, key string) string {
		v, _, _ := unstructured.NestedString(s.Object, "data", key)
		return v
	}
	if pw(a, "password") == "" || pw(a, "password") == pw(b, "password") || pw(a, "replication") == pw(b, "replication") || pw(a, "password") == pw(a, "replication") {
		t.Fatalf("two parents, want four values: %v / %v", a.Object["data"], b.Object["data"])
	}

	// SIGKILL, then a new process: the same values, and no write.
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	second := startLoomProcess(t, ns, set.args()...)
	eventually(t, 60*time.Second, "the new process reconciles", func(context.Context) error {
		if !second.leading() {
			return errNotYet
		}
		return nil
	})
	// The new process has reconciled both parents (a resync writes nothing
	// for an unchanged parent; a change here would be a write).
	time.Sleep(10 * time.Second)
	for _, s := range []*unstructured.Unstructured{a, b} {
		now := secret(s.GetName())
		if now.GetResourceVersion() != s.GetResourceVersion() {
			t.Errorf("%s was written after the restart: %v, was %v", s.GetName(), now.Object["data"], s.Object["data"])
		}
	}
	if out := second.Output(); !strings.Contains(out, "Started workers") {
		t.Errorf("the second process did not start:\n%s", out)
	}
	seed := secret("loom-seed-randomapp.charts.e2e.loom.dev-a")
	if refs := seed.GetOwnerReferences(); len(refs) != 1 || refs[0].Name != "a" || (refs[0].Controller != nil && *refs[0].Controller) {
		t.Errorf("seed Secret's owners %v, want parent a, not as controller", refs)
	}
}
