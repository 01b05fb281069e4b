package reader

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/seed"
	"github.com/loom-operator/loom/engine/render"
)

// Lookups is what a reader uses of a cluster's child cache
// (childcache.Cache): the reader of one reconcile's lookups of parent p,
// whose set declares rules; authorize, if not nil, checks each lookup of
// a declared kind.
type Lookups interface {
	Reader(ctx context.Context, p childcache.ParentKey, rules []config.LookupRule, authorize childcache.Authorizer) *childcache.Reader
}

// CapabilitiesFunc returns the cluster's capabilities, for a chart's
// .Capabilities (Capabilities.Get).
type CapabilitiesFunc func() (*chart.Capabilities, error)

// Reader is the render.Reader of one reconcile: the child cache's reader
// of lookups, with the parent's seed (render.Seeder), the cluster's
// capabilities (render.CapabilitiesReader), and the set's ServiceAccount
// that lookups of declared kinds are made as.
type Reader struct {
	*childcache.Reader
	// ctx is the reconcile's, which the seed's reads and writes use.
	ctx   context.Context
	seeds *seed.Store
	caps  CapabilitiesFunc
	// as, when set, is the set's ServiceAccount: a lookup of a declared
	// kind is answered only if the account may make it.
	as     *identity.Account
	idents identity.Source
	// seedMark, when set, is the fingerprint of the seed this render
	// read, to be written on the parent (seed.AnnotationSeed).
	seedMark string
}

// New returns the reader of one reconcile of parent p, whose set declares
// rules, reading lookups from lookups, seeds from seeds and capabilities
// from caps.
func New(ctx context.Context, lookups Lookups, p childcache.ParentKey, rules []config.LookupRule, seeds *seed.Store, caps CapabilitiesFunc) *Reader {
	r := &Reader{ctx: ctx, seeds: seeds, caps: caps}
	r.Reader = lookups.Reader(ctx, p, rules, r.authorize)
	return r
}

// ActAs makes the reader answer lookups of declared kinds only when the
// set's ServiceAccount as (nil: Loom itself) may make them, as idents
// decide.
func (r *Reader) ActAs(as *identity.Account, idents identity.Source) {
	r.as, r.idents = as, idents
}

// authorize checks that the set's ServiceAccount, if it has one, may
// make a lookup of a declared kind.
func (r *Reader) authorize(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace, name string) error {
	if r.as == nil {
		return nil
	}
	return r.idents.Authorize(ctx, r.as, verb, gvr, namespace, name)
}

// Seed is the parent's seed (render.Seeder). A lost seed is the
// parent's to settle (a *seed.LostError, not retried: the annotation that
// accepts a new seed brings the next reconcile); any other failure is the
// environment's, retried like a lookup that failed.
func (r *Reader) Seed(parent *unstructured.Unstructured) (render.Seed, error) {
	b, mark, err := r.seeds.Seed(r.ctx, parent)
	var lost *seed.LostError
	if errors.As(err, &lost) {
		return render.Seed{}, err
	}
	if err != nil {
		return render.Seed{}, r.Fail(err)
	}
	if mark {
		r.seedMark = seed.Fingerprint(b.Bytes)
	}
	return b, nil
}

// Keep keeps the values a render's generating functions made in the
// parent's seed Secret (seed.Store.Keep). A failure is retried.
func (r *Reader) Keep(parent *unstructured.Unstructured, generated map[string]string) error {
	if err := r.seeds.Keep(r.ctx, parent, generated); err != nil {
		return r.Fail(err)
	}
	return nil
}

// SeedMark is the fingerprint of the seed this reader's renders read, to
// be written on the parent (seed.AnnotationSeed), or "" when there is
// none to write.
func (r *Reader) SeedMark() string { return r.seedMark }

// SeedMarked says the parent holds SeedMark now.
func (r *Reader) SeedMarked() { r.seedMark = "" }

// Capabilities are the cluster's, for a chart's .Capabilities
// (render.CapabilitiesReader). A failure is the environment's, retried.
func (r *Reader) Capabilities() (*chart.Capabilities, error) {
	caps, err := r.caps()
	if err != nil {
		return nil, r.Fail(err)
	}
	return caps, nil
}
