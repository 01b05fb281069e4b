package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/transport"
	"github.com/loom-operator/loom/engine/shard"
)

// Sharder is what the Manager needs of this replica's membership of a
// shard group (member.Member): which parents it owns, a gate that a
// release waits on, and news of changes.
type Sharder interface {
	// Held is the set of buckets this replica may reconcile now.
	Held() shard.Set
	// Owns says whether this replica may write for the parent now.
	Owns(uid types.UID) bool
	// Enter starts work for a parent this replica owns; leave ends it.
	Enter(uid types.UID) (leave func(), ok bool)
	// Subscribe calls fn with the held set each time it changes.
	Subscribe(fn func(shard.Set))
	// ID names this replica in the group.
	ID() string
}

// labelBucket puts the parent's bucket on each child, so that a replica's
// child informers select the children of the parents it holds.
func labelBucket(children []*unstructured.Unstructured, parent types.UID) {
	v := shard.BucketLabel(parent)
	for _, c := range children {
		labels := c.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[shard.LabelBucket] = v
		c.SetLabels(labels)
	}
}

// enterShard starts the reconcile of parent on a sharded replica: ok is
// false if this replica does not own it; otherwise ctx carries the
// parent's UID for the guard, and done ends the work and logs its interval
// (the e2e tests prove from these lines that no two replicas reconciled
// one parent at once). A parent that is gone (nil) needs no gate: its
// reconcile writes nothing. One without a UID has no bucket, so no
// replica may write for it.
func (c *Controller) enterShard(ctx context.Context, parent *unstructured.Unstructured) (context.Context, func(), bool) {
	sh := c.sh.Shard
	if sh == nil || parent == nil {
		return ctx, func() {}, true
	}
	uid := parent.GetUID()
	if uid == "" {
		return ctx, nil, false
	}
	leave, ok := sh.Enter(uid)
	if !ok {
		return ctx, nil, false
	}
	// The ID it entered as: a lapse meanwhile rejoins under another.
	id, start := sh.ID(), time.Now()
	return transport.WithParentUID(ctx, uid), func() {
		end := time.Now()
		leave()
		if v := klog.FromContext(ctx).V(2); v.Enabled() { // every reconcile passes here
			v.Info("Reconcile interval", "uid", uid,
				"start", start.UTC().Format(time.RFC3339Nano), "end", end.UTC().Format(time.RFC3339Nano), "replica", id)
		}
	}, true
}
