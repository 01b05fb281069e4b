package transport

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ErrNotOwner is a write refused because this replica no longer owns the
// parent it was for.
var ErrNotOwner = fmt.Errorf("this replica no longer owns the parent")

// parentUIDKey carries, in a request's context, the parent it is for.
type parentUIDKey struct{}

// WithParentUID marks ctx as work for the parent with uid: the shard
// guard refuses its writes once this replica no longer owns the parent.
func WithParentUID(ctx context.Context, uid types.UID) context.Context {
	return context.WithValue(ctx, parentUIDKey{}, uid)
}

// ParentUIDFrom returns the parent uid ctx works for, or "".
func ParentUIDFrom(ctx context.Context) types.UID {
	uid, _ := ctx.Value(parentUIDKey{}).(types.UID)
	return uid
}

// Owner is what a ShardGuard asks of this replica's membership of its
// shard group.
type Owner interface {
	// Owns says whether this replica may write for the parent now.
	Owns(uid types.UID) bool
}

// ShardGuard checks, just before each mutating request is sent, that this
// replica still owns the parent the request is for (its context says
// which). It is the last of Loom's round trippers, so every write of a
// reconcile passes it: applies, prunes, status, finalizers, whatever
// identity they are sent as.
type ShardGuard struct {
	// Next sends the requests the guard lets through.
	Next http.RoundTripper
	// Owner says which parents this replica owns.
	Owner Owner
}

// RoundTrip sends req unless it writes for a parent this replica does
// not own.
func (g *ShardGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return g.Next.RoundTrip(req)
	}
	uid := ParentUIDFrom(req.Context())
	if uid == "" {
		return g.Next.RoundTrip(req)
	}
	logger := klog.FromContext(req.Context())
	if !g.Owner.Owns(uid) {
		logger.Info("Refused a write for a parent this replica does not own", "uid", uid, "method", req.Method, "path", req.URL.Path)
		return nil, fmt.Errorf("%s %s for parent %s: %w", req.Method, req.URL.Path, uid, ErrNotOwner)
	}
	if v := logger.V(2); v.Enabled() { // every write passes here: format only what is logged
		v.Info("Shard write", "uid", uid, "method", req.Method, "at", time.Now().UTC().Format(time.RFC3339Nano))
	}
	return g.Next.RoundTrip(req)
}
