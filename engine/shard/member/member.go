package member

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/shard"
)

// Labels and the annotation of the group's Leases.
const (
	// LabelGroup names the group on its members' Leases and its table.
	LabelGroup = "loom.dev/shard-group"
	// LabelRole is "member" on a replica's Lease, "table" on the table.
	LabelRole = "loom.dev/shard-role"
	// AnnotationTable holds the table (shard.Table.Encode).
	AnnotationTable = "loom.dev/shard-table"
)

// Client is the part of kubernetes.Interface a Member uses.
type Client interface {
	CoordinationV1() coordclient.CoordinationV1Interface
}

// Options configure a Member.
type Options struct {
	// Client reaches the API server: a kubernetes.Interface, or the
	// smaller kubeclient.Clients (only its coordination.k8s.io/v1 client
	// is used).
	Client Client
	// Namespace holds the Leases.
	Namespace string
	// Group names the set of replicas that share the parents; the table
	// is the Lease <Group>-shards.
	Group string
	// Prefix starts each ID this replica takes (usually the pod's name);
	// a random suffix follows.
	Prefix string
	// LeaseDuration is how long a member counts as live after others saw
	// its last renewal. RenewInterval is how often it renews.
	LeaseDuration, RenewInterval time.Duration
	// Margin is how long before its Lease would expire for others a
	// replica stops writing (see rule 1 in the package doc).
	Margin time.Duration
	// Metrics, if set, counts moves and reports holdings.
	Metrics *Metrics
}

// Member is one replica's membership: its Lease, its view of the others,
// and the buckets it holds.
type Member struct {
	opts   Options
	leases coordclient.LeaseInterface
	base   time.Time // origin of the monotonic readings below
	// held is the shard.Set this replica may write for, accept the one it
	// starts new work for (held but for buckets being released, whose
	// work in flight finishes); validUntil is the nanoseconds after base
	// at which its own Lease stops being safe.
	held       atomic.Uint64
	accept     atomic.Uint64
	validUntil atomic.Int64
	gates      [shard.Buckets]sync.RWMutex

	mu    sync.Mutex
	id    string
	own   *coordinationv1.Lease // as last written
	seen  map[string]seen       // other members' Leases, by name
	store cache.Store
	subs  []func(shard.Set)
	kick  chan struct{}
	renew time.Duration // since base, when the last renewal started
	// joined is when this replica last joined: it claims nothing for a
	// RenewInterval after, so that replicas started together see each
	// other first and each claims its share, rather than the first
	// claiming (and listing) every parent only to let most go again.
	joined time.Duration
	// wrote is the table as this replica last wrote it, and behind the
	// versions the cache may hold until it has caught up with that write.
	wrote  *coordinationv1.Lease
	behind []string
	// wakeAt is when (since base) the view of the others next changes by
	// time alone, 0 for never: Run steps then (see view.wake).
	wakeAt time.Duration
}

// seen is when this replica first saw a member's Lease at a version, and
// whether it made sure the Lease is gone (deleted it, or was told it is
// not found). The member may write until at+duration at most: it renewed
// before this replica saw the renewal, and stops writing LeaseDuration
// after the renewal started, less a margin (rule 1 of the package doc).
type seen struct {
	rv       string
	at       time.Duration
	duration time.Duration
	gone     bool
}

// deadline is when the member stops writing at the latest.
func (s seen) deadline() time.Duration { return s.at + s.duration }

// New returns a Member; Run makes it join.
func New(opts Options) *Member {
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 6 * time.Second
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = 2 * time.Second
	}
	if opts.Margin <= 0 {
		opts.Margin = time.Second
	}
	return &Member{opts: opts, leases: opts.Client.CoordinationV1().Leases(opts.Namespace), base: time.Now(),
		seen: map[string]seen{}, kick: make(chan struct{}, 1)}
}

func (m *Member) now() time.Duration { return time.Since(m.base) }

// ID is the replica's current ID, its Lease's name.
func (m *Member) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Held returns the buckets this replica may reconcile now.
func (m *Member) Held() shard.Set {
	if m.now() >= time.Duration(m.validUntil.Load()) {
		return 0
	}
	return shard.Set(m.held.Load())
}

// Owns says whether this replica may write for the parent with uid now.
func (m *Member) Owns(uid types.UID) bool { return m.Held().Has(shard.Bucket(uid)) }

// Enter starts work for the parent with uid: ok is false unless this
// replica owns it, and leave must be called when the work is done. A
// bucket is released only once the work entered for it has left.
func (m *Member) Enter(uid types.UID) (leave func(), ok bool) {
	b := shard.Bucket(uid)
	g := &m.gates[b]
	g.RLock()
	if !shard.Set(m.accept.Load()).Has(b) || !m.Owns(uid) {
		g.RUnlock()
		return nil, false
	}
	return g.RUnlock, true
}

// Subscribe calls fn, from Run's goroutine, with the held set each time it
// changes. fn must not block for long.
func (m *Member) Subscribe(fn func(shard.Set)) {
	m.mu.Lock()
	m.subs = append(m.subs, fn)
	m.mu.Unlock()
}

// Run joins the group and keeps the membership until ctx is done; then it
// hands its buckets over (after the work in flight for them left) and
// deletes its Lease. It returns once that is done or failed.
func (m *Member) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("shard")
	inf := m.leaseInformer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.wake() },
		UpdateFunc: func(any, any) { m.wake() },
		DeleteFunc: func(any) { m.wake() },
	})
	m.store = inf.GetStore()
	informerCtx, stopInformer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformer()
	go inf.Run(informerCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("wait for the shard Leases in %s: %w", m.opts.Namespace, context.Cause(ctx))
	}
	if err := m.join(ctx, logger); err != nil {
		return err
	}
	tick := time.NewTicker(m.opts.RenewInterval / 4)
	defer tick.Stop()
	// expiry fires when another member's Lease expires (or a gone one's
	// deadline passes), so that its buckets are fenced and claimed then,
	// not up to a tick later.
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return m.leave(context.WithoutCancel(ctx), logger)
		case <-tick.C:
		case <-m.kick:
		case <-expiry.C:
		}
		m.step(ctx, logger)
		// A time already past (a step that did not plan) is left to the
		// tick, so that the loop never spins.
		if d := m.nextWake() - m.now(); m.nextWake() > 0 && d > 0 {
			expiry.Reset(d)
		}
	}
}

// wakeIn records that the view of the others changes by time alone in d
// (0: never).
func (m *Member) wakeIn(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wakeAt = 0
	if d > 0 {
		m.wakeAt = m.now() + d
	}
}

// nextWake is when (since base) Run should step again for the view's sake,
// 0 for not before its next tick or event.
func (m *Member) nextWake() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wakeAt
}

// leaseInformer watches the group's Leases in the namespace: the informer
// that client-go's shared informer factory makes for Leases (with the
// namespace index, no resync, the group's label selector), built here from
// the Member's client so that no factory, which reaches every API group's
// informers, is linked.
func (m *Member) leaseInformer() cache.SharedIndexInformer {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = LabelGroup + "=" + m.opts.Group }
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return m.leases.List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return m.leases.Watch(context.Background(), o)
		},
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return m.leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return m.leases.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, m.opts.Client),
		&coordinationv1.Lease{}, cache.SharedIndexInformerOptions{
			Indexers:   cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			Identifier: (*cache.InformerName)(nil).WithResource(gvr),
		})
}

func (m *Member) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// join takes a new ID and creates its Lease, retrying until ctx is done.
func (m *Member) join(ctx context.Context, logger klog.Logger) error {
	for {
		id := m.opts.Prefix + "-" + suffix()
		start := m.now()
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: m.opts.Namespace,
				Labels: map[string]string{LabelGroup: m.opts.Group, LabelRole: "member"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: seconds(m.opts.LeaseDuration),
				AcquireTime: nowMicro(), RenewTime: nowMicro()},
		}
		rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
		created, err := m.leases.Create(rctx, lease, metav1.CreateOptions{})
		cancel()
		if err == nil {
			m.mu.Lock()
			m.id, m.own, m.renew, m.joined = id, created, start, start
			m.mu.Unlock()
			m.validUntil.Store(int64(start + m.opts.LeaseDuration - m.opts.Margin))
			logger.Info("Joined the shard group", "group", m.opts.Group, "id", id, "lease", m.opts.Namespace+"/"+id)
			return nil
		}
		logger.Error(err, "Cannot create this replica's shard Lease; retrying", "lease", m.opts.Namespace+"/"+id)
		select {
		case <-ctx.Done():
			return fmt.Errorf("join shard group %s: %w", m.opts.Group, err)
		case <-time.After(m.opts.RenewInterval / 2):
		}
	}
}

// step renews the Lease when due, notices a lapse, and moves buckets as
// shard.Plan says (not for a renew interval after joining: see joined).
func (m *Member) step(ctx context.Context, logger klog.Logger) {
	if m.now() >= time.Duration(m.validUntil.Load()) {
		m.lapse(ctx, logger)
		return
	}
	if err := m.renewIfDue(ctx); err != nil {
		logger.Error(err, "Cannot renew this replica's shard Lease", "id", m.ID())
		if errors.Is(err, errFenced) {
			m.lapse(ctx, logger)
		}
		return
	}
	m.mu.Lock()
	settling := m.now()-m.joined < m.opts.RenewInterval
	m.mu.Unlock()
	if !settling {
		m.rebalance(ctx, logger)
	}
}

// renewIfDue renews the Lease if a renew interval has passed since the
// last renewal started.
func (m *Member) renewIfDue(ctx context.Context) error {
	m.mu.Lock()
	due := m.now()-m.renew >= m.opts.RenewInterval
	m.mu.Unlock()
	if !due {
		return nil
	}
	return m.renewLease(ctx)
}

// lapse gives up everything at once: the Lease is no longer safe (or was
// fenced). The replica joins again under a new ID, so that its old table
// entries count as a dead member's.
func (m *Member) lapse(ctx context.Context, logger klog.Logger) {
	m.accept.Store(0)
	old := shard.Set(m.held.Swap(0))
	m.validUntil.Store(0)
	logger.Info("This replica's shard Lease lapsed; it holds nothing now and joins again under a new ID",
		"id", m.ID(), "dropped", old.String())
	m.opts.Metrics.moved("lapse", old)
	m.notify(0)
	_ = m.join(ctx, logger)
}

var errFenced = errors.New("the Lease was deleted or changed by another replica")

// renewLease updates the own Lease's renewTime (compare-and-swap on its
// resourceVersion) and, on success, extends validUntil.
func (m *Member) renewLease(ctx context.Context) error {
	m.mu.Lock()
	lease := m.own.DeepCopy()
	m.mu.Unlock()
	start := m.now()
	lease.Spec.RenewTime = nowMicro()
	rctx, cancel := context.WithTimeout(ctx, m.opts.RenewInterval)
	defer cancel()
	updated, err := m.leases.Update(rctx, lease, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		updated, err = m.renewAgain(rctx, lease)
	}
	if err != nil {
		if isGone(err) {
			return fmt.Errorf("renew Lease %s/%s: %w: %w", m.opts.Namespace, lease.Name, errFenced, err)
		}
		return fmt.Errorf("renew Lease %s/%s: %w", m.opts.Namespace, lease.Name, err)
	}
	m.mu.Lock()
	m.own, m.renew = updated, start
	m.mu.Unlock()
	m.validUntil.Store(int64(start + m.opts.LeaseDuration - m.opts.Margin))
	return nil
}

// renewAgain renews the Lease at the version the server holds, after a
// renewal of lease met a conflict. Only this replica updates its Lease
// (others fence it by a delete), so the conflict comes from an earlier
// renewal of its own that reached the server after its request timed out:
// that must not count as fenced. A Lease of another UID does.
func (m *Member) renewAgain(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	cur, err := m.leases.Get(ctx, lease.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if cur.UID != lease.UID {
		return nil, apierrors.NewConflict(coordinationv1.Resource("leases"), lease.Name, fmt.Errorf("recreated with UID %s", cur.UID))
	}
	cur = cur.DeepCopy()
	cur.Spec.RenewTime = lease.Spec.RenewTime
	return m.leases.Update(ctx, cur, metav1.UpdateOptions{})
}

func (m *Member) notify(held shard.Set) {
	m.mu.Lock()
	subs := append([]func(shard.Set){}, m.subs...)
	m.mu.Unlock()
	m.opts.Metrics.hold(held)
	for _, fn := range subs {
		fn(held)
	}
}

// drainPoll is how often drain looks again whether the work in flight
// for a bucket has left.
const drainPoll = 10 * time.Millisecond

// drain waits until the work entered for buckets has left; they must be
// out of the accepted set already (so work that tries to enter leaves at
// once). A reconcile may take longer than the Lease lasts, so drain keeps
// renewing it meanwhile, as often as Run's loop would, even after ctx is
// done (a replica that shuts down holds its buckets until it has handed
// them over). It returns false, leaving the rest undrained, if the Lease
// lapsed all the same; the writes in flight are refused then.
func (m *Member) drain(ctx context.Context, logger klog.Logger, buckets shard.Set) bool {
	ctx = context.WithoutCancel(ctx)
	var tried time.Duration
	for _, b := range buckets.Buckets() {
		for !m.gates[b].TryLock() {
			if m.now() >= time.Duration(m.validUntil.Load()) {
				return false
			}
			if m.now()-tried >= m.opts.RenewInterval/4 {
				tried = m.now()
				if err := m.renewIfDue(ctx); err != nil {
					logger.Error(err, "Cannot renew this replica's shard Lease while its work in flight finishes", "id", m.ID())
				}
			}
			time.Sleep(drainPoll)
		}
		m.gates[b].Unlock()
	}
	return true
}

func seconds(d time.Duration) *int32 {
	s := int32((d + time.Second - 1) / time.Second)
	return &s
}

func nowMicro() *metav1.MicroTime {
	t := metav1.NewMicroTime(time.Now())
	return &t
}

// suffix is five random lower-case letters and digits.
func suffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, 5)
	for i := range out {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		out[i] = alphabet[n.Int64()]
	}
	return string(out)
}
