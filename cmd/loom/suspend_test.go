package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/loom-operator/loom/api/v1alpha1"
)

var myResources = schema.GroupVersionResource{Group: "example.loom.dev", Version: "v1alpha1", Resource: "myresources"}

// runSuspend runs loom suspend (or resume) with args against client, and
// returns its output, its error and the patches it sent.
func runSuspend(t *testing.T, suspend bool, objs []runtime.Object, args ...string) (string, error, []clienttesting.PatchAction) {
	t.Helper()
	scheme := runtime.NewScheme()
	client := fake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		myResources: "MyResourceList", v1alpha1.TemplateSetGVR: "TemplateSetList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(myResources.GroupVersion().WithKind("MyResource"), meta.RESTScopeNamespace)
	o := &suspendOptions{connect: func(kubeTarget) (dynamic.Interface, meta.RESTMapper, string, error) {
		return client, mapper, "ctx-ns", nil
	}}
	cmd := suspendCommand(o, suspend)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	var patches []clienttesting.PatchAction
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patches = append(patches, p)
		}
	}
	return out.String(), err, patches
}

func parentObj(ns, name string, labels map[string]string, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.loom.dev/v1alpha1")
	u.SetKind("MyResource")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(ann)
	return u
}

// loom suspend and loom resume patch the annotation (or the TemplateSet's
// spec.suspend) of exactly the objects named, under the field manager
// loom-suspend, and print one line each.
func TestSuspendAndResume(t *testing.T) {
	objs := func() []runtime.Object {
		ts := &unstructured.Unstructured{}
		ts.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.TemplateSetKind))
		ts.SetName("myresource")
		return []runtime.Object{
			parentObj("team-a", "web", map[string]string{"tier": "front"}, nil),
			parentObj("team-a", "db", map[string]string{"tier": "back"}, map[string]string{"loom.dev/suspend": "true"}),
			parentObj("ctx-ns", "web", nil, nil),
			ts,
		}
	}
	suspendBody := `{"metadata":{"annotations":{"loom.dev/suspend":"true"}}}`
	resumeBody := `{"metadata":{"annotations":{"loom.dev/suspend":null}}}`
	for _, tt := range []struct {
		name    string
		suspend bool
		args    []string
		out     string
		patched []string // namespace/name: body
		wantErr string
	}{
		{name: "one parent", suspend: true, args: []string{"myresource/web", "-n", "team-a"},
			out: "myresources/web suspended\n", patched: []string{"team-a/web: " + suspendBody}},
		{name: "the context's namespace, by plural", suspend: true, args: []string{"myresources/web"},
			out: "myresources/web suspended\n", patched: []string{"ctx-ns/web: " + suspendBody}},
		{name: "with the group", suspend: false, args: []string{"MyResource.example.loom.dev/db", "-n", "team-a"},
			out: "myresources/db resumed\n", patched: []string{"team-a/db: " + resumeBody}},
		{name: "all", suspend: true, args: []string{"myresource", "--all", "-n", "team-a"},
			out: "myresources/db suspended\nmyresources/web suspended\n", patched: []string{"team-a/db: " + suspendBody, "team-a/web: " + suspendBody}},
		{name: "a selector", suspend: false, args: []string{"myresource", "-l", "tier=back", "-n", "team-a"},
			out: "myresources/db resumed\n", patched: []string{"team-a/db: " + resumeBody}},
		{name: "the set", suspend: true, args: []string{"--set", "myresource"},
			out: "templateset/myresource suspended\n", patched: []string{"/myresource: " + `{"spec":{"suspend":true}}`}},
		{name: "the set resumed", suspend: false, args: []string{"--set", "myresource"},
			out: "templateset/myresource resumed\n", patched: []string{"/myresource: " + `{"spec":{"suspend":null}}`}},
		{name: "a set without a TemplateSet", suspend: true, args: []string{"--set", "other"},
			patched: []string{"/other: " + `{"spec":{"suspend":true}}`}, wantErr: "Loom keeps a TemplateSet for a set with a rollout policy"},
		{name: "a missing parent", suspend: true, args: []string{"myresource/nope", "-n", "team-a"},
			patched: []string{"team-a/nope: " + suspendBody}, wantErr: `myresources/nope: myresources.example.loom.dev "nope" not found`},
		{name: "an unknown kind", suspend: true, args: []string{"other/web"}, wantErr: "kind other:"},
		{name: "nothing named", suspend: true, wantErr: "name the parents"},
		{name: "a kind without a name", suspend: true, args: []string{"myresource"}, wantErr: `"myresource" is not KIND/NAME`},
		{name: "--all with a name", suspend: true, args: []string{"myresource/web", "--all"}, wantErr: "take one KIND, without a name"},
		{name: "--set with a parent", suspend: true, args: []string{"myresource/web", "--set", "x"}, wantErr: "--set names a TemplateSet"},
		{name: "no match", suspend: true, args: []string{"myresource", "-l", "tier=none", "-n", "team-a"}, wantErr: "no myresources in namespace team-a match"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err, patches := runSuspend(t, tt.suspend, objs(), tt.args...)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if out != tt.out {
				t.Errorf("output = %q, want %q", out, tt.out)
			}
			var got []string
			for _, p := range patches {
				got = append(got, p.GetNamespace()+"/"+p.GetName()+": "+string(p.GetPatch()))
			}
			if diff := cmp.Diff(tt.patched, got); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
		})
	}
}

// The patch names loom-suspend as its field manager, never Loom's own.
func TestSuspendFieldManager(t *testing.T) {
	_, err, patches := runSuspend(t, true, []runtime.Object{parentObj("team-a", "web", nil, nil)}, "myresource/web", "-n", "team-a")
	if err != nil || len(patches) != 1 {
		t.Fatalf("err %v, %d patches", err, len(patches))
	}
	if got := patches[0].(clienttesting.PatchActionImpl).PatchOptions.FieldManager; got != suspendFieldManager {
		t.Errorf("field manager = %q, want %q", got, suspendFieldManager)
	}
}
