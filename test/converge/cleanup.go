package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// deleteNamespace deletes a namespace this program created and waits until
// it is gone, so that its garbage collection never overlaps the next phase.
// It runs even when the run was cancelled, within its own time limit.
func (b *bench) deleteNamespace(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.deleteTimeout)
	defer cancel()
	start := time.Now()
	err := b.client.Resource(namespaceGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := b.client.Resource(namespaceGVR).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("wait for namespace %s to be deleted: %w", name, err)
	}
	logf("namespace %s deleted in %s", name, secs(time.Since(start)))
	return nil
}

// emptyNamespace is the cleanup of a bare cluster, which has no namespace
// controller to finish deleting a namespace and no garbage collector to
// delete children: it deletes the parents, then every Deployment, Service
// and ConfigMap in the namespace, waits until they are gone, and leaves the
// empty namespace. Nothing of the phase is left for a Loom that watches
// every namespace to see.
func (b *bench) emptyNamespace(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.deleteTimeout)
	defer cancel()
	start := time.Now()
	gvrs := []schema.GroupVersionResource{myResourceGVR}
	for _, gvr := range childResources {
		gvrs = append(gvrs, gvr)
	}
	for _, gvr := range gvrs {
		if err := deleteAll(ctx, b.client, gvr, name); err != nil {
			return err
		}
	}
	logf("namespace %s emptied (parents and children deleted) in %s", name, secs(time.Since(start)))
	return nil
}

// deleteAll deletes every object of a resource in a namespace and waits
// until none is left. A DeleteCollection of thousands of objects can
// outlast the API server's request timeout while it goes on deleting, so
// one that fails is logged, and sent again while objects are left.
func deleteAll(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace string) error {
	// Background: a foreground deletion waits for a garbage collector.
	background := metav1.DeletePropagationBackground
	var last error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			last = err
			return false, nil
		}
		if len(l.Items) == 0 {
			return true, nil
		}
		err = client.Resource(gvr).Namespace(namespace).DeleteCollection(ctx,
			metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		if err != nil {
			last = err
			logf("delete %s in %s: %v (trying again while some are left)", gvr.Resource, namespace, err)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("delete every %s in %s: %w (last error: %v)", gvr.Resource, namespace, err, last)
	}
	return nil
}
