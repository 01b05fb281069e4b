package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/internal/clusteradmin"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// defaultClusterTimeout is loom diff's --cluster-timeout: how long a
// workload cluster may take to answer one request.
const defaultClusterTimeout = 10 * time.Second

// place is one cluster a diff reads and dry-runs children in: the cluster
// the parents are in (name ""), or a registered workload cluster.
type place struct {
	name    string
	client  dynamic.Interface
	applier *apply.Applier
}

// newPlace makes a place's clients from cfg. It contacts no server.
func newPlace(name string, cfg *rest.Config) (*place, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &place{name: name, client: client, applier: apply.New(client, mapper, "")}, nil
}

// workloads are the registered workload clusters a diff may reach: each
// is connected the first time a child goes there, and a cluster that
// failed once fails every later use with the same error, so that a
// cluster that does not answer costs one timeout, not one per child.
type workloads struct {
	regs    map[string]cluster.Registration // cluster.Index's: a name two Secrets claim is not there
	opts    cluster.Options
	timeout time.Duration
	places  map[string]*place
	failed  map[string]error
}

// readRegistrations lists the Secrets of Loom's namespace ns in the
// management cluster (cfg) that register workload clusters, as loom
// cluster list does, and reads them as the controller does: a Secret that
// cannot be read is reported on warn and left out.
func readRegistrations(ctx context.Context, cfg *rest.Config, ns string, warn io.Writer) ([]cluster.Registration, error) {
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	secrets, err := clusteradmin.Secrets(ctx, kube.CoreV1().Secrets(ns), ns)
	if err != nil {
		return nil, fmt.Errorf("read the cluster registrations: %w", err)
	}
	regs, errs := cluster.FromSecrets(secrets, ns)
	for _, err := range errs {
		fmt.Fprintln(warn, "Warning:", err)
	}
	return regs, nil
}

// newWorkloads returns the workload clusters regs register.
func newWorkloads(regs []cluster.Registration, opts cluster.Options, timeout time.Duration) *workloads {
	index, _ := cluster.Index(regs) // the render refuses a name claimed twice
	return &workloads{regs: index, opts: opts, timeout: timeout, places: map[string]*place{}, failed: map[string]error{}}
}

// at returns the workload cluster name, connected when first needed, or
// the error it failed with before.
func (w *workloads) at(name string) (*place, error) {
	if err := w.failed[name]; err != nil {
		return nil, err
	}
	if p := w.places[name]; p != nil {
		return p, nil
	}
	reg, ok := w.regs[name]
	if !ok {
		return nil, fmt.Errorf("cluster %s: not registered", name)
	}
	cfg, err := cluster.RESTConfig(reg, w.opts) // refuses what Loom refuses
	if err != nil {
		w.failed[name] = err
		return nil, err
	}
	cfg.UserAgent = "loom"
	cfg.Timeout = w.timeout // every request, connecting included
	p, err := newPlace(name, cfg)
	if err != nil {
		err = fmt.Errorf("cluster %s: %w", name, err)
		w.failed[name] = err
		return nil, err
	}
	w.places[name] = p
	return p, nil
}

// fail records that a request to the workload cluster name failed with
// err (already named by unanswered), when the cluster did not answer: it
// is not asked again.
func (w *workloads) fail(name string, err error) {
	var down *clusterDownError
	if name != "" && errors.As(err, &down) {
		w.failed[name] = err
	}
}

// clusterDownError is a request to a workload cluster that got no answer:
// none within --cluster-timeout, or nothing listening at its address.
type clusterDownError struct {
	cluster string
	why     string
	err     error
}

func (e *clusterDownError) Error() string {
	return fmt.Sprintf("cluster %s %s: %v", e.cluster, e.why, e.err)
}

func (e *clusterDownError) Unwrap() error { return e.err }

// unanswered names the workload cluster in err, a request's error there,
// and says so when the cluster did not answer in time or could not be
// connected to. It returns err as it is for the cluster the parents are
// in ("").
func unanswered(cluster string, timeout time.Duration, err error) error {
	if err == nil || cluster == "" {
		return err
	}
	var netErr net.Error
	var opErr *net.OpError
	switch msg := err.Error(); {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() ||
		strings.Contains(msg, "Client.Timeout exceeded") || strings.Contains(msg, "i/o timeout"):
		return &clusterDownError{cluster: cluster, why: fmt.Sprintf("did not answer within %s (--cluster-timeout)", timeout), err: err}
	case errors.As(err, &opErr) || strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host"):
		return &clusterDownError{cluster: cluster, why: "cannot be reached", err: err}
	case strings.Contains(msg, "in cluster "+cluster+":"):
		return err // it names the cluster (a child's ref does)
	}
	return fmt.Errorf("cluster %s: %w", cluster, err)
}
