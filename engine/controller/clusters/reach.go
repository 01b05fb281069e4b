package clusters

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/object"
)

// Unanswered returns the workload clusters, by name, in which an apply of
// results met a cluster that did not answer, each with the last such
// error: its children's kind could not be watched there, no response came
// (a refused connection, a deadline), or the API server there said it
// cannot answer now. A refusal (invalid, forbidden, not adopted), a kind
// that cluster does not serve, a registration gone or a kubeconfig Loom
// may not use are answers: they fail the child, not the cluster.
func Unanswered(results object.ChangeSet) map[string]error {
	var out map[string]error
	for _, r := range results {
		if r.Ref.Cluster == "" || r.Err == nil || !unanswered(r.Err) {
			continue
		}
		if out == nil {
			out = map[string]error{}
		}
		out[r.Ref.Cluster] = r.Err
	}
	return out
}

// unanswered reports whether err says that a cluster did not answer.
func unanswered(err error) bool {
	var nw *childcache.NotWatchedError
	if errors.As(err, &nw) {
		return true
	}
	if object.Retryable(err) == nil || errors.Is(err, ErrNotRegistered) || errors.Is(err, cluster.ErrInvalidKubeconfig) || errors.Is(err, cluster.ErrExecNotAllowed) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true // no answer from an API server at all
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err)
}

// Observe records, for each workload cluster results placed children in,
// whether it answered (Options.Reachable), and returns those that did not
// (Unanswered). A cluster that did not answer is taken as down for
// Options.Backoff (Place fails at once); one that answered, as up. A
// failure Place gave at once (a *DownError) changes neither.
func (f *Fleet) Observe(results object.ChangeSet) map[string]error {
	out := Unanswered(results)
	if f == nil {
		return out
	}
	seen := map[string]bool{}
	for _, r := range results {
		if r.Ref.Cluster == "" || seen[r.Ref.Cluster] {
			continue
		}
		seen[r.Ref.Cluster] = true
		err, down := out[r.Ref.Cluster]
		if f.opts.Reachable != nil {
			f.opts.Reachable(r.Ref.Cluster, !down)
		}
		var de *DownError
		if !errors.As(err, &de) {
			f.markDown(r.Ref.Cluster, err)
		}
	}
	return out
}
