package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/api/v1alpha1"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs server-side applies every CRD in dir and waits until each is
// established.
func InstallCRDs(ctx context.Context, dyn dynamic.Interface, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if raw, err = StorageVersionOnly(raw); err != nil {
			return fmt.Errorf("install %s: %w", f, err)
		}
		if err := ApplyCRD(ctx, dyn, raw); err != nil {
			return fmt.Errorf("install %s: %w", f, err)
		}
		if err := dropOtherVersions(ctx, dyn, raw); err != nil {
			return fmt.Errorf("install %s: %w", f, err)
		}
	}
	return nil
}

// StorageVersionOnly returns a CRD, given as YAML, that serves only its
// storage version, with no conversion. The suites share one CRD of each
// shipped kind, and between tests no Loom serves its conversion webhook:
// a served version that needs it would stall the deletion of every test
// namespace that holds parents, and the garbage collector's watch of the
// kind (which reads the preferred version). Tests of versions make CRDs
// of their own.
func StorageVersionOnly(raw []byte) ([]byte, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	versions, _, _ := unstructured.NestedSlice(obj, "spec", "versions")
	if len(versions) < 2 {
		return raw, nil
	}
	var kept []any
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["storage"] == true {
			kept = append(kept, m)
		}
	}
	if len(kept) != 1 {
		return nil, fmt.Errorf("%d storage versions", len(kept))
	}
	if err := unstructured.SetNestedSlice(obj, kept, "spec", "versions"); err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(obj, "spec", "conversion")
	return yaml.Marshal(obj)
}

// dropOtherVersions takes out of the live CRD the versions and the
// conversion that raw (StorageVersionOnly's) leaves out: the apply keeps
// what another field manager owns (make run applies the shipped CRD with
// v1 and its webhook as Loom's), so a replace of the spec removes them.
func dropOtherVersions(ctx context.Context, dyn dynamic.Interface, raw []byte) error {
	want := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &want.Object); err != nil {
		return err
	}
	wantVersions, _, _ := unstructured.NestedSlice(want.Object, "spec", "versions")
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := dyn.Resource(crdGVR).Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
		_, converts, _ := unstructured.NestedMap(live.Object, "spec", "conversion")
		strategy, _, _ := unstructured.NestedString(live.Object, "spec", "conversion", "strategy")
		if len(versions) == len(wantVersions) && (!converts || strategy == "None") {
			return nil
		}
		if err := unstructured.SetNestedSlice(live.Object, wantVersions, "spec", "versions"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(live.Object, map[string]any{"strategy": "None"}, "spec", "conversion"); err != nil {
			return err
		}
		_, err = dyn.Resource(crdGVR).Update(ctx, live, metav1.UpdateOptions{FieldManager: "e2e"})
		return err
	})
}

// ApplyCRD server-side applies one CRD, given as YAML, and waits until it is
// established.
func ApplyCRD(ctx context.Context, dyn dynamic.Interface, raw []byte) error {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		return err
	}
	if _, err := dyn.Resource(crdGVR).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "e2e", Force: true}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := dyn.Resource(crdGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st, _, _ := Condition(crd, "Established")
		return st == "True", nil
	})
}

// Condition returns the status, reason and message of an object's
// condition of type typ, or empty strings if it has none.
func Condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// Clients are a test binary's clients of the local cluster.
type Clients struct {
	Config *rest.Config         // reaches the API server
	Dyn    dynamic.Interface    // for unstructured objects (parents, CRDs)
	Kube   kubernetes.Interface // for built-in kinds
}

// Connect loads kubeconfig, makes clients whose rate limit suits load
// tests (500 requests per second), checks that the API server answers, and
// installs the CRDs in the folder crds.
func Connect(ctx context.Context, kubeconfig, crds string) (*Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	c := &Clients{Config: cfg}
	if c.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if _, err := c.Kube.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("reach the API server at %s: %w", cfg.Host, err)
	}
	return c, InstallCRDs(ctx, c.Dyn, crds)
}

// DeleteRollouts deletes the TemplateSets and TemplateRevisions that a Loom
// watching only namespace made (label loom.dev/namespace): they are
// cluster-scoped, so the namespace's deletion leaves them behind.
func DeleteRollouts(ctx context.Context, dyn dynamic.Interface, namespace string) error {
	sel := metav1.ListOptions{LabelSelector: v1alpha1.NamespaceLabel + "=" + namespace}
	var errs []error
	for _, gvr := range []schema.GroupVersionResource{v1alpha1.TemplateSetGVR, v1alpha1.TemplateRevisionGVR} {
		if err := dyn.Resource(gvr).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the %s of namespace %s: %w", gvr.Resource, namespace, err))
		}
	}
	return errors.Join(errs...)
}
