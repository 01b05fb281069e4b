package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/engine/render"
)

var (
	myResourceGVR = schema.GroupVersionResource{Group: "example.loom.dev", Version: "v1alpha1", Resource: "myresources"}
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	namespaceGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// loadExample reads the one parent in path and sets its replicas.
func loadExample(path string, replicas int64) (*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objs, err := render.ReadParents(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("read %s: want one parent, found %d", path, len(objs))
	}
	p := objs[0]
	if err := unstructured.SetNestedField(p.Object, replicas, "spec", "replicas"); err != nil {
		return nil, fmt.Errorf("set spec.replicas: %w", err)
	}
	return p, nil
}

// parentsFor returns n copies of example in namespace, named prefix-0000
// and on (or just prefix when n is 1).
func parentsFor(example *unstructured.Unstructured, namespace, prefix string, n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, n)
	for i := range out {
		p := example.DeepCopy()
		p.SetNamespace(namespace)
		p.SetName(prefix)
		if n > 1 {
			p.SetName(fmt.Sprintf("%s-%04d", prefix, i))
		}
		out[i] = p
	}
	return out
}

func names(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	return out
}

// create creates the parents in order, concurrency at a time, and sends
// each created parent (with its UID) to out, if out is not nil. It returns
// when each create returned. The creator is the same in every phase.
func create(ctx context.Context, client dynamic.Interface, parents []*unstructured.Unstructured, concurrency int, out chan<- *unstructured.Unstructured) ([]time.Time, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	created := make([]time.Time, len(parents))
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				p := parents[i]
				c, err := client.Resource(myResourceGVR).Namespace(p.GetNamespace()).Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					cancel(fmt.Errorf("create MyResource %s/%s: %w", p.GetNamespace(), p.GetName(), err))
					continue
				}
				created[i] = time.Now()
				if out != nil {
					select {
					case out <- c:
					case <-ctx.Done():
					}
				}
			}
		}()
	}
feed:
	for i := range parents {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return created, nil
}
