package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
)

const parentDoc = `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: app, namespace: default, generation: 7}
spec: {image: nginx}
`

// The children as rendered: no status.
const (
	renderedConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: default}
data: {a: b}
`
	renderedDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec: {replicas: 3}
`
	renderedService = `
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec: {ports: [{port: 8080}]}
`
)

// The children as live.
const (
	liveService = `
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec: {type: ClusterIP, clusterIP: 10.96.0.12, ports: [{port: 8080}]}
`
	liveDeploymentReady = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`
	liveDeploymentRolling = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default, generation: 3}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 3
  replicas: 3
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`
	liveDeploymentDeadline = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default, generation: 3}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 3
  replicas: 3
  updatedReplicas: 1
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: timed out}
`
)

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// baseInput is a parent with three rendered children, all applied and ready.
func baseInput(t testing.TB) Input {
	t.Helper()
	return Input{
		Parent:   obj(t, parentDoc),
		Rendered: objs(t, renderedConfigMap, renderedDeployment, renderedService),
		Results: object.ChangeSet{
			{Ref: ref("", "v1", "ConfigMap", "app-config"), Action: object.Unchanged},
			{Ref: ref("apps", "v1", "Deployment", "app"), Action: object.Configured},
			{Ref: ref("", "v1", "Service", "app"), Action: object.Unchanged},
		},
		Live: liveOf(objs(t, renderedConfigMap, liveDeploymentReady, liveService)...),
		Now:  now,
	}
}

func ref(group, version, kind, name string) object.Ref {
	_ = version
	return object.Ref{GroupKind: schema.GroupKind{Group: group, Kind: kind}, Namespace: "default", Name: name}
}

// failResult marks the result for r as failed with err.
// The result names the version the child was rendered at, as the apply
// stage's results do.
func failResult(in *Input, r object.Ref, err error) {
	res := object.Result{Ref: r, Action: object.Failed, Err: err}
	for _, obj := range in.Rendered {
		if object.RefOf(obj) == r {
			res.APIVersion = obj.GetAPIVersion()
		}
	}
	for i := range in.Results {
		if in.Results[i].Ref == r {
			in.Results[i] = res
			return
		}
	}
	in.Results = append(in.Results, res)
}

const ownedMsg = "Deployment.apps default/app is controlled by Widget w, not by MyResource app; " +
	"Loom does not take over another controller's object: rename the child in the template, or delete the object or its ownerReference"

var renderErr = &render.Error{File: "deployment.yaml", Line: 12, Err: errors.New(`at <.Spec.image>: map has no entry for key "image"`)}

var identityErr = errors.New(`ServiceAccount shop/deployer not found: create it, or fix loom.yaml's serviceAccountName`)

var rolloutErr = errors.New(`list TemplateSet app: templatesets.loom.dev "app" is forbidden`)

var allGood = map[string]cond{
	TypeReady:       {"True", ReasonAllChildrenReady, "all 3 children are ready"},
	TypeProgressing: {"False", ReasonComplete, "all 3 children are ready"},
	TypeDegraded:    {"False", ReasonAsExpected, "no failures"},
}

func TestComputeConditions(t *testing.T) {
	deployRef := ref("apps", "v1", "Deployment", "app")
	tests := []struct {
		name      string
		edit      func(t *testing.T, in *Input)
		wantConds map[string]cond
		wantState string
	}{{
		name:      "all ready",
		edit:      func(*testing.T, *Input) {},
		wantConds: allGood,
		wantState: StateReady,
	}, {
		name: "one deployment rolling out",
		edit: func(t *testing.T, in *Input) { in.Live[deployRef] = obj(t, liveDeploymentRolling) },
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonChildrenNotReady, "waiting for Deployment app: Updated: 1/3"},
			TypeProgressing: {"True", ReasonChildrenProgressing, "waiting for Deployment app: Updated: 1/3"},
			TypeDegraded:    {"False", ReasonAsExpected, "no failures"},
		},
		wantState: StateBuilding,
	}, {
		name: "two children not found yet, right after apply",
		edit: func(t *testing.T, in *Input) { in.Live = liveOf(obj(t, renderedConfigMap)) },
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonChildrenNotReady, "waiting for Deployment app: not found yet (and 1 more)"},
			TypeProgressing: {"True", ReasonChildrenProgressing, "waiting for Deployment app: not found yet (and 1 more)"},
			TypeDegraded:    {"False", ReasonAsExpected, "no failures"},
		},
		wantState: StateBuilding,
	}, {
		name: "render error",
		edit: func(t *testing.T, in *Input) { in.Rendered, in.Results, in.RenderErr = nil, nil, renderErr },
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonRenderFailed, "cannot render children: " + renderErr.Error()},
			TypeProgressing: {"False", ReasonRenderFailed, "nothing is rolled out while the templates fail to render"},
			TypeDegraded:    {"True", ReasonRenderFailed, `deployment.yaml:12: at <.Spec.image>: map has no entry for key "image"`},
		},
		wantState: StateFailed,
	}, {
		name: "rollout state unavailable",
		edit: func(t *testing.T, in *Input) { in.Rendered, in.Results, in.RolloutErr = nil, nil, rolloutErr },
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonRolloutUnavailable, "cannot tell which template revision to render: " + rolloutErr.Error()},
			TypeProgressing: {"False", ReasonRolloutUnavailable, "nothing is rolled out while the set's rollout state is unavailable"},
			TypeDegraded:    {"True", ReasonRolloutUnavailable, rolloutErr.Error()},
		},
		wantState: StateFailed,
	}, {
		name: "the set's ServiceAccount is missing",
		edit: func(t *testing.T, in *Input) { in.Rendered, in.Results, in.IdentityErr = nil, nil, identityErr },
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonServiceAccountUnavailable, "cannot act as the set's ServiceAccount: " + identityErr.Error()},
			TypeProgressing: {"False", ReasonServiceAccountUnavailable, "nothing is rolled out while the set's ServiceAccount is unavailable"},
			TypeDegraded:    {"True", ReasonServiceAccountUnavailable, identityErr.Error()},
		},
		wantState: StateFailed,
	}, {
		name: "deleted, waiting for a cluster-scoped child held by its finalizer",
		edit: func(t *testing.T, in *Input) {
			in.Rendered, in.Results, in.Deleting = nil, nil, errors.New("waiting for 1 cluster-scoped child to be deleted: ClusterRole web (finalizers: example.com/hold)")
		},
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonDeletionBlocked, "being deleted: waiting for 1 cluster-scoped child to be deleted: ClusterRole web (finalizers: example.com/hold)"},
			TypeProgressing: {"False", ReasonDeletionBlocked, "the deletion waits: waiting for 1 cluster-scoped child to be deleted: ClusterRole web (finalizers: example.com/hold)"},
			TypeDegraded:    {"True", ReasonDeletionBlocked, "waiting for 1 cluster-scoped child to be deleted: ClusterRole web (finalizers: example.com/hold)"},
		},
		wantState: StateDeleting,
	}, {
		name: "apply error on one child",
		edit: func(t *testing.T, in *Input) {
			failResult(in, deployRef, errors.New(`deployments.apps "app" is forbidden: exceeded quota`))
		},
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonApplyFailed, `apply Deployment app: deployments.apps "app" is forbidden: exceeded quota`},
			TypeProgressing: {"False", ReasonApplyFailed, `apply Deployment app: deployments.apps "app" is forbidden: exceeded quota`},
			TypeDegraded:    {"True", ReasonApplyFailed, `apply Deployment app: deployments.apps "app" is forbidden: exceeded quota`},
		},
		wantState: StateFailed,
	}, {
		name: "apply error as the apply stage wraps it: the child is named once",
		edit: func(t *testing.T, in *Input) {
			failResult(in, deployRef, fmt.Errorf("apply %s: %w", deployRef, errors.New(`deployments.apps "app" is forbidden: exceeded quota`)))
		},
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonApplyFailed, `apply Deployment app: deployments.apps "app" is forbidden: exceeded quota`},
			TypeProgressing: {"False", ReasonApplyFailed, `apply Deployment app: deployments.apps "app" is forbidden: exceeded quota`},
			TypeDegraded:    {"True", ReasonApplyFailed, `apply Deployment app: deployments.apps "app" is forbidden: exceeded quota`},
		},
		wantState: StateFailed,
	}, {
		name: "child name taken by another controller's object",
		edit: func(t *testing.T, in *Input) {
			failResult(in, deployRef, &object.OwnedByAnotherError{Ref: deployRef,
				Owner: metav1.OwnerReference{Kind: "Widget", Name: "w"}, Want: metav1.OwnerReference{Kind: "MyResource", Name: "app"}})
		},
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonApplyFailed, ownedMsg},
			TypeProgressing: {"False", ReasonApplyFailed, ownedMsg},
			TypeDegraded:    {"True", ReasonApplyFailed, ownedMsg},
		},
		wantState: StateFailed,
	}, {
		name: "kind not served by the cluster",
		edit: func(t *testing.T, in *Input) {
			w := obj(t, "{apiVersion: example.com/v1, kind: Widget, metadata: {name: app, namespace: default}}")
			in.Rendered = append(in.Rendered, w)
			noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, SearchedVersions: []string{"v1"}}
			failResult(in, object.RefOf(w), fmt.Errorf("get mapping: %w", noMatch))
		},
		wantConds: map[string]cond{
			TypeReady: {"False", ReasonApplyFailed,
				"apply Widget app: kind Widget (example.com/v1) is not served by the cluster; is its CRD installed?"},
			TypeProgressing: {"False", ReasonApplyFailed,
				"apply Widget app: kind Widget (example.com/v1) is not served by the cluster; is its CRD installed?"},
			TypeDegraded: {"True", ReasonApplyFailed,
				"apply Widget app: kind Widget (example.com/v1) is not served by the cluster; is its CRD installed?"},
		},
		wantState: StateFailed,
	}, {
		name: "child failed",
		edit: func(t *testing.T, in *Input) { in.Live[deployRef] = obj(t, liveDeploymentDeadline) },
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonChildFailed, "Deployment app failed: Progress deadline exceeded: timed out"},
			TypeProgressing: {"False", ReasonChildFailed, "Deployment app failed: Progress deadline exceeded: timed out"},
			TypeDegraded:    {"True", ReasonChildFailed, "Deployment app failed: Progress deadline exceeded: timed out"},
		},
		wantState: StateFailed,
	}, {
		name: "several problems: the most severe is the reason, the others are counted",
		edit: func(t *testing.T, in *Input) {
			in.Live[deployRef] = obj(t, liveDeploymentDeadline)
			failResult(in, ref("", "v1", "Service", "app"), errors.New("conflict"))
			in.ExtraErr = &render.Error{File: "status.yaml", Line: 2, Err: errors.New("boom")}
		},
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonApplyFailed, "apply Service app: conflict (and 1 more)"},
			TypeProgressing: {"False", ReasonApplyFailed, "apply Service app: conflict (and 1 more)"},
			TypeDegraded:    {"True", ReasonApplyFailed, "apply Service app: conflict (and 2 more)"},
		},
		wantState: StateFailed,
	}, {
		name: "status template error degrades status only",
		edit: func(t *testing.T, in *Input) {
			in.Extra = map[string]any{"url": "http://stale"}
			in.ExtraErr = &render.Error{File: "status.yaml", Line: 2, Err: errors.New(`map has no entry for key "port"`)}
		},
		wantConds: map[string]cond{
			TypeReady:       allGood[TypeReady],
			TypeProgressing: allGood[TypeProgressing],
			TypeDegraded: {"True", ReasonStatusTemplateFailed,
				`status template failed: status.yaml:2: map has no entry for key "port"`},
		},
		wantState: StateReady,
	}, {
		name: "ignored child rolling out does not hold Ready back",
		edit: func(t *testing.T, in *Input) {
			in.Live[deployRef] = obj(t, liveDeploymentRolling)
			in.Rules = []config.ReadinessRule{{Kind: "Deployment", Ignore: true}}
		},
		wantConds: map[string]cond{
			TypeReady:       {"True", ReasonAllChildrenReady, "all 2 children are ready (1 more ignored)"},
			TypeProgressing: {"False", ReasonComplete, "all 2 children are ready (1 more ignored)"},
			TypeDegraded:    {"False", ReasonAsExpected, "no failures"},
		},
		wantState: StateReady,
	}, {
		name: "ignored child that failed to apply still counts",
		edit: func(t *testing.T, in *Input) {
			in.Rules = []config.ReadinessRule{{Kind: "Deployment", Ignore: true}}
			failResult(in, deployRef, errors.New("conflict"))
		},
		wantConds: map[string]cond{
			TypeReady:       {"False", ReasonApplyFailed, "apply Deployment app: conflict"},
			TypeProgressing: {"False", ReasonApplyFailed, "apply Deployment app: conflict"},
			TypeDegraded:    {"True", ReasonApplyFailed, "apply Deployment app: conflict"},
		},
		wantState: StateFailed,
	}, {
		name: "no children",
		edit: func(t *testing.T, in *Input) { in.Rendered, in.Results, in.Live = nil, nil, nil },
		wantConds: map[string]cond{
			TypeReady:       {"True", ReasonAllChildrenReady, "no children to wait for"},
			TypeProgressing: {"False", ReasonComplete, "no children to wait for"},
			TypeDegraded:    {"False", ReasonAsExpected, "no failures"},
		},
		wantState: StateReady,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput(t)
			tt.edit(t, &in)
			got := Compute(in)
			if diff := cmp.Diff(tt.wantConds, condsOf(t, got)); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantState, got["state"]); diff != "" {
				t.Errorf("state mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComputeFullStatus checks the whole map: every field, its JSON type,
// observedGeneration on the status and on each condition, and time format.
func TestComputeFullStatus(t *testing.T) {
	in := baseInput(t)
	in.Now = time.Date(2024, 5, 1, 14, 30, 15, 123456789, time.FixedZone("CEST", 2*3600))
	in.Extra = map[string]any{"url": "http://app.default.svc:8080", "replicas": 3}
	got := Compute(in)
	ts := "2024-05-01T12:30:15Z"
	want := map[string]any{
		"observedGeneration": int64(7),
		"state":              "Ready",
		"url":                "http://app.default.svc:8080",
		"replicas":           int64(3),
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "AllChildrenReady",
				"message": "all 3 children are ready", "lastTransitionTime": ts, "observedGeneration": int64(7)},
			map[string]any{"type": "Progressing", "status": "False", "reason": "Complete",
				"message": "all 3 children are ready", "lastTransitionTime": ts, "observedGeneration": int64(7)},
			map[string]any{"type": "Degraded", "status": "False", "reason": "AsExpected",
				"message": "no failures", "lastTransitionTime": ts, "observedGeneration": int64(7)},
		},
		"children": []any{
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config",
				"ready": true, "status": "Current", "message": "Resource is always ready"},
			map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "app",
				"ready": true, "status": "Current", "message": "Deployment is available. Replicas: 3"},
			map[string]any{"apiVersion": "v1", "kind": "Service", "name": "app",
				"ready": true, "status": "Current", "message": "Service is ready"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compute() mismatch (-want +got):\n%s", diff)
	}
	// The map must hold only JSON values; DeepCopyJSON panics otherwise.
	if diff := cmp.Diff(got, runtime.DeepCopyJSON(got)); diff != "" {
		t.Errorf("DeepCopyJSON changed the status (-want +got):\n%s", diff)
	}
}

func TestComputeChildren(t *testing.T) {
	in := baseInput(t)
	deployRef := ref("apps", "v1", "Deployment", "app")
	in.Rules = []config.ReadinessRule{{Kind: "ConfigMap", Ignore: true}}
	delete(in.Live, deployRef)
	failResult(&in, ref("", "v1", "Service", "app"), errors.New("conflict with "+strings.Repeat("x", 400)))
	got := Compute(in)["children"]
	want := []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config",
			"ready": true, "status": "Current", "message": "ignored: Resource is always ready"},
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "app",
			"ready": false, "status": "NotFound", "message": "not found yet"},
		map[string]any{"apiVersion": "v1", "kind": "Service", "name": "app",
			"ready": false, "status": "Current", "message": truncate("apply failed: conflict with "+strings.Repeat("x", 400), 256)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children mismatch (-want +got):\n%s", diff)
	}
	msg := got.([]any)[2].(map[string]any)["message"].(string)
	if len(msg) != maxChildMessage || !strings.HasSuffix(msg, "...") {
		t.Errorf("child message is %d bytes ending %q, want %d ending \"...\"", len(msg), msg[len(msg)-5:], maxChildMessage)
	}
}

// TestComputeRenderErrorKeepsChildren: nothing was applied, so the previous
// children stay listed; a live object the caller supplies refreshes its entry.
// The same holds when the set's rollout state is unavailable.
func TestComputeRenderErrorKeepsChildren(t *testing.T) {
	for _, name := range []string{"render error", "rollout unavailable"} {
		t.Run(name, func(t *testing.T) { testKeepsChildren(t, name == "rollout unavailable") })
	}
}

func testKeepsChildren(t *testing.T, rollout bool) {
	in := baseInput(t)
	previous := Compute(in)
	in.Parent = withStatus(t, in.Parent, previous)
	in.Rendered, in.Results, in.RenderErr = nil, nil, renderErr
	if rollout {
		in.RenderErr, in.RolloutErr = nil, rolloutErr
	}
	in.Live = liveOf(obj(t, liveDeploymentRolling))

	got := Compute(in)
	want := []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config",
			"ready": true, "status": "Current", "message": "Resource is always ready"},
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "app",
			"ready": false, "status": "InProgress", "message": "Updated: 1/3"},
		map[string]any{"apiVersion": "v1", "kind": "Service", "name": "app",
			"ready": true, "status": "Current", "message": "Service is ready"},
	}
	if diff := cmp.Diff(want, got["children"]); diff != "" {
		t.Errorf("children mismatch (-want +got):\n%s", diff)
	}
	if got["state"] != StateFailed {
		t.Errorf("state = %v, want %s", got["state"], StateFailed)
	}
}

// reasonedErr is a render error that names its own reason.
type reasonedErr struct{ reason string }

func (e reasonedErr) Error() string  { return "the seed is gone" }
func (e reasonedErr) Reason() string { return e.reason }

// A render error that names its reason (Reasoned) gives Ready and
// Degraded that reason, wrapped or not; any other, RenderFailed.
func TestComputeRenderErrorReason(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", renderErr, ReasonRenderFailed},
		{"reasoned", reasonedErr{ReasonSeedLost}, ReasonSeedLost},
		{"wrapped", fmt.Errorf("loom.yaml: %w", reasonedErr{ReasonSeedLost}), ReasonSeedLost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput(t)
			in.Rendered, in.Results, in.RenderErr = nil, nil, tt.err
			got := Compute(in)
			for _, typ := range []string{TypeReady, TypeDegraded} {
				if c := findCond(t, got, typ); c["reason"] != tt.want {
					t.Errorf("%s reason %v, want %s", typ, c["reason"], tt.want)
				}
			}
		})
	}
}

func findCond(t *testing.T, st map[string]any, typ string) map[string]any {
	t.Helper()
	for _, c := range st["conditions"].([]any) {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	t.Fatalf("no %s condition in %v", typ, st["conditions"])
	return nil
}

// A child placed in a workload cluster is listed with its cluster, beside
// the local child of the same kind and name, which has none; a render
// that fails keeps both entries apart, and ChildClusters names the
// cluster.
func TestComputeChildrenInClusters(t *testing.T) {
	in := baseInput(t)
	remote := obj(t, renderedConfigMap)
	remote.SetAnnotations(map[string]string{object.AnnotationCluster: "eu-1"})
	remoteLive := remote.DeepCopy()
	in.Rendered = append(in.Rendered[:1], remote)
	in.Results = append(in.Results[:1], object.Result{Ref: object.RefOf(remote), Action: object.Created})
	in.Live = liveOf(obj(t, renderedConfigMap), remoteLive)
	want := []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config",
			"ready": true, "status": "Current", "message": "Resource is always ready"},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config", "cluster": "eu-1",
			"ready": true, "status": "Current", "message": "Resource is always ready"},
	}
	got := Compute(in)
	if diff := cmp.Diff(want, got["children"]); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	in.Parent = withStatus(t, in.Parent, got)
	if diff := cmp.Diff([]string{"eu-1"}, ChildClusters(in.Parent)); diff != "" {
		t.Errorf("ChildClusters (-want +got):\n%s", diff)
	}
	in.Rendered, in.Results, in.RenderErr = nil, nil, renderErr
	if diff := cmp.Diff(want, Compute(in)["children"]); diff != "" {
		t.Errorf("children after a failed render (-want +got):\n%s", diff)
	}
}

// A workload cluster that does not answer makes Ready False with reason
// ClusterUnreachable, naming the cluster and its last error, above the
// failed applies it causes; Degraded says so too, and so does state.
func TestComputeClusterUnreachable(t *testing.T) {
	in := baseInput(t)
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	in.Unreachable = map[string]error{"w1": refused}
	st := Compute(in)
	for _, typ := range []string{TypeReady, TypeDegraded} {
		c := findCond(t, st, typ)
		want := map[string]bool{TypeReady: false, TypeDegraded: true}[typ]
		if c["reason"] != ReasonClusterUnreachable || (c["status"] == "True") != want {
			t.Errorf("%s = %v %v, want %v ClusterUnreachable", typ, c["status"], c["reason"], want)
		}
		if msg, _ := c["message"].(string); !strings.Contains(msg, "cluster w1 does not answer: "+refused.Error()) {
			t.Errorf("%s message %q does not name the cluster and its error", typ, msg)
		}
	}
	if c := findCond(t, st, TypeProgressing); c["status"] != "False" || c["reason"] != ReasonClusterUnreachable {
		t.Errorf("Progressing = %v %v, want False ClusterUnreachable", c["status"], c["reason"])
	}
	if st["state"] != StateFailed {
		t.Errorf("state = %v, want %s", st["state"], StateFailed)
	}
}

// TestComputeSuspended: a suspended parent is not rendered or applied, so
// its children stay as last listed, judged against their live objects; a
// Suspended condition says where the suspension comes from, and the state
// is Suspended. Resumed, the condition is gone.
func TestComputeSuspended(t *testing.T) {
	in := baseInput(t)
	previous := Compute(in)
	if c := conditionIn(t, previous, TypeSuspended); c != nil {
		t.Fatalf("a parent never suspended has a Suspended condition: %v", c)
	}
	previous["url"] = "http://app.default.svc"
	in.Parent = withStatus(t, in.Parent, previous)
	in.Rendered, in.Results = nil, nil
	in.Suspended = &object.Suspension{Reason: object.ReasonSuspendedByTemplateSet, Message: "spec.suspend of TemplateSet web is true"}
	in.Live = liveOf(obj(t, liveDeploymentRolling))

	got := Compute(in)
	if got["state"] != StateSuspended {
		t.Errorf("state = %v, want %s", got["state"], StateSuspended)
	}
	want := map[string]any{"type": TypeSuspended, "status": "True", "reason": object.ReasonSuspendedByTemplateSet,
		"message": "spec.suspend of TemplateSet web is true"}
	c := conditionIn(t, got, TypeSuspended)
	for k, v := range want {
		if c[k] != v {
			t.Errorf("Suspended condition %s = %v, want %v", k, c[k], v)
		}
	}
	if got["url"] != "http://app.default.svc" {
		t.Errorf("status.url = %v: the status template's field as last written is lost", got["url"])
	}
	kids, _ := got["children"].([]any)
	if len(kids) != 3 || kids[1].(map[string]any)["message"] != "Updated: 1/3" {
		t.Errorf("children are not the last listed, judged live: %v", got["children"])
	}

	in.Parent = withStatus(t, in.Parent, got)
	in.Suspended = nil
	if c := conditionIn(t, Compute(in), TypeSuspended); c != nil {
		t.Errorf("a resumed parent keeps its Suspended condition: %v", c)
	}
}

// conditionIn returns the condition of type typ in status, or nil.
func conditionIn(t *testing.T, status map[string]any, typ string) map[string]any {
	t.Helper()
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

// TestComputeSuspendedBeforeItsChildren: a parent suspended before Loom
// ever rendered it (created with loom.dev/suspend, no templateRevision and
// no children in its status) is not Ready: it has children, none made.
// The old Compute called it Ready, "no children to wait for".
func TestComputeSuspendedBeforeItsChildren(t *testing.T) {
	in := baseInput(t)
	in.Rendered, in.Results, in.Live, in.Revision = nil, nil, nil, ""
	in.Suspended = &object.Suspension{Reason: object.ReasonSuspendedByAnnotation, Message: "the parent's loom.dev/suspend is true"}
	got := Compute(in)
	c := conditionIn(t, got, TypeReady)
	if c["status"] != "False" || c["reason"] != ReasonSuspendedBeforeCreation {
		t.Errorf("Ready = %v, want False, reason %s", c, ReasonSuspendedBeforeCreation)
	}
	if got["state"] != StateSuspended {
		t.Errorf("state = %v, want %s", got["state"], StateSuspended)
	}
	// It stays so at the next reconcile, and a parent that Loom rendered
	// with no children at all is Ready when suspended.
	in.Parent = withStatus(t, in.Parent, got)
	if c := conditionIn(t, Compute(in), TypeReady); c["reason"] != ReasonSuspendedBeforeCreation {
		t.Errorf("the second reconcile's Ready = %v", c)
	}
	in.Suspended = nil
	in.Parent = withStatus(t, in.Parent, Compute(in))
	in.Suspended = &object.Suspension{Reason: object.ReasonSuspendedByAnnotation, Message: "the parent's loom.dev/suspend is true"}
	if c := conditionIn(t, Compute(in), TypeReady); c["status"] != "True" {
		t.Errorf("a parent rendered with no children, then suspended: Ready = %v", c)
	}
}
