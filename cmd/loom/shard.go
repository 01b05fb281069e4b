package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller"
	"github.com/loom-operator/loom/engine/shard/member"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// shardOptions are loom run's flags for sharding.
type shardOptions struct {
	enabled      bool
	namespace    string
	group        string
	prefix       string
	duration     time.Duration
	renew        time.Duration
	serverFilter bool
}

func addShardFlags(f *pflag.FlagSet, o *shardOptions) {
	f.BoolVar(&o.enabled, "sharded", false, "run several replicas that share the parents: each reconciles the parents of the buckets it holds (a Lease per replica in --shard-namespace); not with --leader-elect")
	f.StringVar(&o.namespace, "shard-namespace", "", "namespace of the shard group's Leases (default: the pod's own, from $POD_NAMESPACE or the service account's namespace file; required out of a cluster)")
	f.StringVar(&o.group, "shard-group", "loom", "name of the shard group: replicas with the same group share the parents; its table is the Lease <group>-shards")
	f.StringVar(&o.prefix, "shard-id-prefix", "", "start of this replica's member ID, which a random suffix follows (default: $POD_NAME, else the host name)")
	f.DurationVar(&o.duration, "shard-lease-duration", 6*time.Second, "a replica that has not renewed its Lease for this long is taken over; its writes stop a second before")
	f.DurationVar(&o.renew, "shard-renew-interval", 2*time.Second, "how often a replica renews its Lease")
	f.BoolVar(&o.serverFilter, "shard-server-filter", true, "send each replica's buckets to the API server as a KEP-5866 shardSelector, so that it lists and watches only its parents (ignored by a server without the ShardedListAndWatch gate; Loom filters in any case)")
}

// check refuses flags that cannot work together.
func (o shardOptions) check(leaderElect bool) error {
	if !o.enabled {
		return nil
	}
	switch {
	case leaderElect:
		return errors.New("--sharded and --leader-elect exclude each other: sharded replicas all reconcile, each its own parents")
	case o.renew <= 0 || o.duration < 2*o.renew:
		return fmt.Errorf("--shard-lease-duration (%s) must be at least twice --shard-renew-interval (%s)", o.duration, o.renew)
	case o.duration <= time.Second:
		return fmt.Errorf("--shard-lease-duration (%s) must be longer than the 1s margin by which a replica stops writing before its Lease expires", o.duration)
	}
	return nil
}

// newMember builds this replica's membership of the shard group, which
// reports on metrics (registered by newRegistry, sharded or not).
func newMember(cfg *rest.Config, o shardOptions, metrics *member.Metrics) (*member.Member, error) {
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create clientset: %w", err)
	}
	prefix := o.prefix
	if prefix == "" {
		prefix = os.Getenv("POD_NAME")
	}
	if prefix == "" {
		if prefix, err = os.Hostname(); err != nil {
			return nil, err
		}
	}
	return member.New(member.Options{Client: kube, Namespace: o.namespace, Group: o.group, Prefix: prefix,
		LeaseDuration: o.duration, RenewInterval: o.renew, Metrics: metrics}), nil
}

// runSharded runs the Manager beside the membership. If the membership
// fails (say, its Leases are forbidden), the Manager stops too: it would
// hold nothing. On SIGTERM both stop: the member hands its buckets over
// once the reconciles in flight have finished.
func runSharded(ctx context.Context, mem *member.Member, mgr *controller.Manager) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	memErr := make(chan error, 1)
	go func() {
		err := mem.Run(runCtx)
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "The shard membership failed; stopping")
			cancel()
		}
		memErr <- err
	}()
	err := mgr.Run(runCtx)
	if merr := <-memErr; merr != nil && ctx.Err() == nil {
		return merr
	}
	return err
}
