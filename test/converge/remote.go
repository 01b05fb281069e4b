package main

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loom-operator/loom/engine/cluster"
)

// A remote phase (-phases remote[/R][@N]) is a loom phase whose parents
// have children in two clusters: Loom runs -remote-templates, the shipped
// MyResource set with its ConfigMap annotated loom.dev/cluster: workload,
// so that each parent's ConfigMap goes to the workload cluster
// (-workload-kubeconfig) and its Deployment and Service stay in the local
// one. Before Loom starts, the phase registers the workload cluster as
// `loom cluster add` does (a Secret in Loom's namespace, labelled
// loom.dev/cluster=workload) and makes its own namespace in the workload
// cluster too; at its end it deletes both. The workload cluster is bare
// (etcd and kube-apiserver): nothing there deletes a namespace's objects,
// so the phase does.

// remoteCluster is the name the remote phases register the workload
// cluster under: the one -remote-templates' loom.yaml allows and its
// ConfigMap names.
const remoteCluster = "workload"

// workloadKubeconfigEnv gives the workload cluster's kubeconfig, as it
// does for the e2e tests (hack/e2e.sh sets it).
const workloadKubeconfigEnv = "LOOM_E2E_WORKLOAD_KUBECONFIG"

// The loom run flag that names Loom's namespace, where the registrations
// are, and its default.
const (
	loomNamespaceFlag    = "loom-namespace"
	defaultLoomNamespace = "loom-system"
)

var secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// defaultWorkloadKubeconfig is -workload-kubeconfig's default:
// $LOOM_E2E_WORKLOAD_KUBECONFIG, then .cluster-workload/kubeconfig if it
// exists, else none.
func defaultWorkloadKubeconfig() string {
	if p := os.Getenv(workloadKubeconfigEnv); p != "" {
		return p
	}
	p := filepath.Join(".cluster-workload", "kubeconfig")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// hasRemote is whether any phase is a remote one.
func hasRemote(phases []phaseSpec) bool {
	for _, s := range phases {
		if s.remote {
			return true
		}
	}
	return false
}

// checkRemote refuses remote phases the run cannot hold: without a
// workload cluster, or with Loom in this process (only loom run reads
// the registrations).
func checkRemote(o options) error {
	if !hasRemote(o.phases) {
		return nil
	}
	if o.workloadKubeconfig == "" {
		return fmt.Errorf("-phases: a remote phase places children in the workload cluster, and none is given: pass -workload-kubeconfig, or set $%s, or start one in .cluster-workload (make cluster-workload)", workloadKubeconfigEnv)
	}
	if o.loomMode != modeProcess {
		return errors.New("-phases: a remote phase runs loom run, which reads the workload cluster's registration: it needs -loom-mode process")
	}
	return nil
}

// registrationNamespace is Loom's namespace, where it reads the
// registrations: --loom-namespace of -loom-args, else loom-system.
func registrationNamespace(loomArgs []string) string {
	if ns, given := flagValue(loomArgs, loomNamespaceFlag); given {
		return ns
	}
	return defaultLoomNamespace
}

// registrationSecret is the Secret that registers the workload cluster
// as remoteCluster in Loom's namespace ns, as `loom cluster add` writes
// it (engine/cluster.NewSecret), for the dynamic client.
func registrationSecret(ns string, kubeconfig []byte) (*unstructured.Unstructured, error) {
	s, err := cluster.NewSecret(remoteCluster, ns, nil, kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("register the workload cluster: %w", err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, fmt.Errorf("register the workload cluster: %w", err)
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// workloadCluster is the workload cluster's clients: the harness's own,
// not counted. rc reads its API server's /metrics.
type workloadCluster struct {
	kubeconfig []byte
	host       string
	client     dynamic.Interface
	kube       kubernetes.Interface
	rc         rest.Interface
}

// connectWorkload connects to the workload cluster of -workload-kubeconfig
// and checks that it answers.
func connectWorkload(ctx context.Context, o options) (*workloadCluster, error) {
	raw, err := os.ReadFile(o.workloadKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("-workload-kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("-workload-kubeconfig %s: %w", o.workloadKubeconfig, err)
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	w := &workloadCluster{kubeconfig: raw, host: cfg.Host}
	if w.client, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("workload cluster client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("workload cluster client: %w", err)
	}
	w.kube, w.rc = kube, kube.Discovery().RESTClient()
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("reach the workload cluster at %s (-workload-kubeconfig %s; hack/cluster/workload.sh up starts it): %w", cfg.Host, o.workloadKubeconfig, err)
	}
	return w, nil
}

// registerWorkload registers the workload cluster for Loom (the Secret in
// Loom's namespace, made if missing, applied over one a failed run left)
// and makes the phase's namespace in it. unregisterWorkload undoes both,
// whichever was done.
func (p *phase) registerWorkload(ctx context.Context) error {
	ns := registrationNamespace(p.opts.loomArgs)
	if err := p.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	secret, err := registrationSecret(ns, p.workload.kubeconfig)
	if err != nil {
		return err
	}
	if _, err := p.client.Resource(secretGVR).Namespace(ns).Apply(ctx, remoteCluster, secret,
		metav1.ApplyOptions{FieldManager: "converge", Force: true}); err != nil {
		return fmt.Errorf("register the workload cluster: apply Secret %s/%s: %w", ns, remoteCluster, err)
	}
	p.registered = true
	nsObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": p.namespace},
	}}
	if _, err := p.workload.client.Resource(namespaceGVR).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s in the workload cluster: %w", p.namespace, err)
	}
	p.remoteNS = true
	logf("%s: registered the workload cluster %s (%s) as Secret %s/%s; namespace %s there", p.label, remoteCluster, p.workload.host, ns, remoteCluster, p.namespace)
	return nil
}

// unregisterWorkload deletes what registerWorkload made: the phase's
// namespace in the workload cluster, with every object in it, and the
// registration Secret. It runs however the phase ended, within its own
// time limit, after the parents are gone (deleteParents): a parent whose
// remote children are left waits for its registration to delete them.
func (p *phase) unregisterWorkload() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.deleteTimeout)
	defer cancel()
	var errs []error
	if p.remoteNS {
		errs = append(errs, p.workload.deleteNamespace(ctx, p.namespace))
	}
	if p.registered {
		ns := registrationNamespace(p.opts.loomArgs)
		err := p.client.Resource(secretGVR).Namespace(ns).Delete(ctx, remoteCluster, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the registration Secret %s/%s: %w", ns, remoteCluster, err))
		}
	}
	return errors.Join(errs...)
}

// deleteNamespace does what the namespace controller the workload
// cluster lacks would do: it deletes every object of the children's
// resources in the namespace, waits until none is left, then deletes the
// namespace, removes its kubernetes finalizer, and waits until it is gone.
func (w *workloadCluster) deleteNamespace(ctx context.Context, ns string) error {
	start := time.Now()
	for _, gvr := range childResources {
		if err := deleteAll(ctx, w.client, gvr, ns); err != nil {
			return fmt.Errorf("workload cluster: %w", err)
		}
	}
	err := w.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workload cluster: delete namespace %s: %w", ns, err)
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n, err := w.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil || len(n.Spec.Finalizers) == 0 {
			return false, nil
		}
		n.Spec.Finalizers = nil
		_, _ = w.kube.CoreV1().Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("workload cluster: wait for namespace %s to be deleted: %w", ns, err)
	}
	logf("workload cluster: namespace %s emptied and deleted in %s", ns, secs(time.Since(start)))
	return nil
}

// deleteParents deletes a remote phase's parents while Loom still runs,
// and waits (up to -delete-timeout) until they are gone: Loom holds each
// one with a finalizer until it has deleted its children in the workload
// cluster. Parents left then (Loom did not start, or did not finish) have
// their finalizers removed once Loom has stopped (releaseParents), so
// that the phase's namespace can go.
func (p *phase) deleteParents() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.deleteTimeout)
	defer cancel()
	start := time.Now()
	background := metav1.DeletePropagationBackground
	parents := p.client.Resource(myResourceGVR).Namespace(p.namespace)
	if err := parents.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete the parents in %s: %w", p.namespace, err)
	}
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := parents.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		logf("%s: parents not all gone within %s of their deletion (-delete-timeout); their finalizers are removed once Loom has stopped", p.label, p.opts.deleteTimeout)
		return nil
	}
	logf("%s: parents and their children in the workload cluster deleted by Loom in %s", p.label, secs(time.Since(start)))
	return nil
}

// releaseParents removes the finalizers of the phase's parents that are
// left, with Loom stopped: none will remove them now.
func (p *phase) releaseParents() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.deleteTimeout)
	defer cancel()
	parents := p.client.Resource(myResourceGVR).Namespace(p.namespace)
	l, err := parents.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the parents left in %s: %w", p.namespace, err)
	}
	released := 0
	for _, u := range l.Items {
		if len(u.GetFinalizers()) == 0 {
			continue
		}
		_, err := parents.Patch(ctx, u.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove the finalizers of MyResource %s/%s: %w", p.namespace, u.GetName(), err)
		}
		released++
	}
	if released > 0 {
		logf("%s: removed the finalizers of %d parents Loom left", p.label, released)
	}
	return nil
}

// scrapeWorkload reads the workload cluster's API server's request
// counters in a remote phase (empty otherwise). A failure is reported and
// leaves them empty, as scrape does.
func (p *phase) scrapeWorkload(ctx context.Context) apiWrites {
	if !p.spec.remote || p.workload == nil {
		return apiWrites{byResource: map[string]float64{}}
	}
	w, err := scrapeWrites(ctx, p.workload.rc)
	if err != nil {
		logf("%s: workload cluster: %v", p.label, err)
	}
	return w
}
