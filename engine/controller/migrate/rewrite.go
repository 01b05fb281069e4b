package migrate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// pageSize is how many parents one list page holds.
const pageSize = 500

// Rewrite updates every parent of gvr (its storage version) as read: a
// no-op write, which the API server encodes in the storage version. A
// conflict reads the parent again and writes that; a parent deleted
// meanwhile is skipped. It returns how many parents it rewrote.
func (m *Migrator) Rewrite(ctx context.Context, gvr schema.GroupVersionResource) (int, error) {
	logger := klog.FromContext(ctx)
	res := m.client.Resource(gvr)
	crd := gvr.GroupResource().String()
	opts := metav1.ListOptions{Limit: pageSize}
	n := 0
	for {
		lctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
		list, err := res.List(lctx, opts)
		cancel()
		if err != nil {
			return n, fmt.Errorf("list %s to migrate them: %w", crd, err)
		}
		for i := range list.Items {
			if err := m.rewriteOne(ctx, gvr, &list.Items[i]); err != nil {
				return n, err
			}
			n++
			m.metrics.parents.WithLabelValues(crd).Inc()
			logger.V(4).Info("Parent rewritten in the storage version", "parent", klog.KObj(&list.Items[i]), "version", gvr.Version)
		}
		if n > 0 {
			logger.V(2).Info("Storage migration progress", "resource", crd, "rewritten", n)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return n, nil
		}
	}
}

// rewriteOne writes obj back as read, reading it again on a conflict.
func (m *Migrator) rewriteOne(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	res := m.client.Resource(gvr).Namespace(obj.GetNamespace())
	cur := obj
	err := retryConflict(func() error {
		rctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
		defer cancel()
		if cur == nil {
			fresh, err := res.Get(rctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur = fresh
		}
		_, err := res.Update(rctx, cur, metav1.UpdateOptions{FieldManager: m.opts.FieldManager})
		if apierrors.IsConflict(err) {
			cur = nil // read it again
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: nothing left to move
	}
	if err != nil {
		return fmt.Errorf("rewrite %s %s: %w", gvr.GroupResource(), klog.KObj(obj), err)
	}
	return nil
}

// conflictBackoff spaces the tries of a write that conflicts: a parent's
// status is written often, so more tries than client-go's default.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 20 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: 2 * time.Second}

// retryConflict runs fn again while it fails with a conflict.
func retryConflict(fn func() error) error {
	return retry.RetryOnConflict(conflictBackoff, fn)
}
