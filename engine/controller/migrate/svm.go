package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// migrationGroup is the storage-version migration API's group.
const migrationGroup = "storagemigration.k8s.io"

// startDeadline is how long a StorageVersionMigration may go without a
// condition before Loom decides no controller runs it (the API can be
// served while kube-controller-manager's migrator is off).
const startDeadline = time.Minute

// errNotRunning means no controller took up the StorageVersionMigration.
var errNotRunning = errors.New("no controller ran the StorageVersionMigration")

// viaAPI creates a StorageVersionMigration of gvr at the migration API's
// version api, or finds the one created before for the same storage
// version, and waits until it succeeds or fails.
func (m *Migrator) viaAPI(ctx context.Context, api string, gvr schema.GroupVersionResource, generation int64) error {
	res := m.client.Resource(schema.GroupVersionResource{Group: migrationGroup, Version: api, Resource: "storageversionmigrations"})
	obj := migrationObject(api, gvr, generation)
	rctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	_, err := res.Create(rctx, obj, metav1.CreateOptions{FieldManager: m.opts.FieldManager})
	cancel()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageVersionMigration %s: %w", obj.GetName(), err)
	}
	klog.FromContext(ctx).Info("Waiting for the StorageVersionMigration", "name", obj.GetName(), "resource", gvr.GroupResource())
	begun := time.Now()
	var result error
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
		defer cancel()
		cur, err := res.Get(rctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil // read again on the next tick
		}
		state, msg := migrationState(cur)
		switch {
		case state == "Succeeded":
			return true, nil
		case state == "Failed":
			result = fmt.Errorf("StorageVersionMigration %s failed: %s", obj.GetName(), msg)
			return true, nil
		case state == "" && time.Since(begun) > startDeadline:
			result = errNotRunning
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for StorageVersionMigration %s: %w", obj.GetName(), err)
	}
	return result
}

// migrationObject is the StorageVersionMigration of gvr: named after the
// resource, its storage version and the CRD's generation, so that a Loom
// started again waits for the same one, and a later change of the CRD
// gets one of its own; v1alpha1 names the version too.
func migrationObject(api string, gvr schema.GroupVersionResource, generation int64) *unstructured.Unstructured {
	resource := map[string]any{"group": gvr.Group, "resource": gvr.Resource}
	if api == "v1alpha1" {
		resource["version"] = gvr.Version
	}
	name := "loom-" + strings.ReplaceAll(gvr.Resource+"."+gvr.Group, "_", "-") + "-" + gvr.Version + "-" + strconv.FormatInt(generation, 10)
	if len(name) > 253 {
		name = name[len(name)-253:]
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": migrationGroup + "/" + api, "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"resource": resource},
	}}
}

// migrationState is "Succeeded" or "Failed" once the migration's
// condition of that type is True, "Running" while it runs, "" before a
// controller took it up; msg is the condition's message.
func migrationState(obj *unstructured.Unstructured) (state, msg string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, want := range []string{"Succeeded", "Failed", "Running"} {
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == want && m["status"] == "True" {
				msg, _ = m["message"].(string)
				return want, msg
			}
		}
	}
	return "", ""
}
