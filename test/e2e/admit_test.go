//go:build e2e

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/engine/crd"
	"github.com/loom-operator/loom/internal/admitcases"
	"github.com/loom-operator/loom/test/env"
)

// admitKind is one of the table's kinds as the test reaches it on the
// cluster and offline.
type admitKind struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	admitter   *crd.Admitter
}

// installAdmitCRDs installs the admission table's CRDs (group
// admit.test.loom.dev), deletes them when the test ends, and returns each
// kind's resource and offline Admitter.
func installAdmitCRDs(t *testing.T) map[string]admitKind {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	crds, err := admitcases.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range admitcases.CRDYAML() {
		if err := e.ApplyCRD(ctx, raw); err != nil {
			t.Fatalf("install the admission table's CRDs: %v", err)
		}
	}
	kinds := map[string]admitKind{}
	for kind, c := range crds {
		t.Cleanup(func() {
			err := e.Dyn.Resource(crdGVR).Delete(context.Background(), c.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete CRD %s: %v", c.Name, err)
			}
		})
		a, err := crd.NewAdmitter(c)
		if err != nil {
			t.Fatalf("NewAdmitter(%s): %v", c.Name, err)
		}
		kinds[kind] = admitKind{
			gvr:        schema.GroupVersionResource{Group: c.Spec.Group, Version: c.Spec.Versions[0].Name, Resource: c.Spec.Names.Plural},
			namespaced: c.Spec.Scope == apiextv1.NamespaceScoped,
			admitter:   a,
		}
	}
	return kinds
}

// warningRecorder keeps the warnings the API server sends back.
type warningRecorder struct{ got []string }

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.got = append(w.got, text)
}

// dryRunCreate creates obj with dryRun=All and returns what the API server
// would store, or its refusal. An Established CRD's resource may answer
// NotFound for a moment while the API server's handler catches up: that
// is retried until it is served.
func dryRunCreate(ctx context.Context, r dynamic.ResourceInterface, obj map[string]any) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	var createErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, createErr = r.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		var status apierrors.APIStatus
		notServed := apierrors.IsNotFound(createErr) && errors.As(createErr, &status) && status.Status().Details != nil && status.Status().Details.Name == ""
		return !notServed, nil
	})
	if err != nil {
		return nil, err
	}
	return out, createErr
}

// TestAdmitAgreesWithAPIServer creates every parent of the shared
// admission table (internal/admitcases) on the real API server with
// dryRun=All and checks that the API server and the offline Admitter give
// the same answer, and that it is the table's: the same accept or refuse,
// the same stored object (defaults, pruning), the same error message.
func TestAdmitAgreesWithAPIServer(t *testing.T) {
	e := env.From(t)
	kinds := installAdmitCRDs(t)
	ns := e.NewNamespace(t)
	ctx := context.Background()
	warnings := &warningRecorder{}
	c := rest.CopyConfig(e.Config)
	c.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range admitcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			obj, err := admitcases.Decode(tc.Object)
			if err != nil {
				t.Fatal(err)
			}
			k := kinds[obj["kind"].(string)]
			var r dynamic.ResourceInterface = dyn.Resource(k.gvr)
			if k.namespaced {
				obj["metadata"].(map[string]any)["namespace"] = ns
				r = dyn.Resource(k.gvr).Namespace(ns)
			}
			offline, offlineWarnings, offlineErr := k.admitter.AdmitWithWarnings(obj)
			warnings.got = nil
			stored, serverErr := dryRunCreate(ctx, r, obj)

			if diff := cmp.Diff(tc.Warnings, warnings.got); diff != "" {
				t.Errorf("API server's warnings are not the table's (-table +server):\n%s", diff)
			}
			if diff := cmp.Diff(warnings.got, offlineWarnings); diff != "" {
				t.Errorf("offline warnings differ from the API server's (-server +offline):\n%s", diff)
			}

			if tc.Error != "" || serverErr != nil || offlineErr != nil {
				if diff := cmp.Diff(tc.Error, errText(serverErr)); diff != "" {
					t.Errorf("API server's error is not the table's (-table +server):\n%s", diff)
				}
				if diff := cmp.Diff(errText(serverErr), errText(offlineErr)); diff != "" {
					t.Errorf("offline error differs from the API server's (-server +offline):\n%s", diff)
				}
				return
			}
			want, err := admitcases.Decode(tc.Stored)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(admitcases.Stored(want), admitcases.Stored(stored.Object)); diff != "" {
				t.Errorf("API server stored another object than the table's (-table +server):\n%s", diff)
			}
			if diff := cmp.Diff(admitcases.Stored(stored.Object), admitcases.Stored(offline)); diff != "" {
				t.Errorf("offline object differs from the API server's (-server +offline):\n%s", diff)
			}
		})
	}
}

// errText is an error's message, or "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
