package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/loom-operator/loom/internal/testutil"
)

// apiWrites are the write requests the API server has served, from every
// client (Loom or the baseline, the creator, the controller-manager, the
// scheduler, kwok), by resource, from its apiserver_request_total metric.
type apiWrites struct {
	// byResource is keyed "resource" or "resource/subresource".
	byResource map[string]float64
	// conflicts are writes answered 409 Conflict.
	conflicts float64
	// all are the requests of every verb, reads and watches included.
	all float64
}

// scrapeWrites reads the API server's /metrics.
func scrapeWrites(ctx context.Context, rc rest.Interface) (apiWrites, error) {
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiWrites{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	m, err := testutil.ParseMetrics(bytes.NewReader(raw))
	if err != nil {
		return apiWrites{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	out := apiWrites{byResource: map[string]float64{}}
	m.Each("apiserver_request_total", func(labels map[string]string, v float64) {
		out.all += v
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		default:
			return
		}
		key := labels["resource"]
		if s := labels["subresource"]; s != "" {
			key += "/" + s
		}
		out.byResource[key] += v
		if labels["code"] == "409" {
			out.conflicts += v
		}
	})
	return out, nil
}

func (a apiWrites) sub(b apiWrites) apiWrites {
	out := apiWrites{byResource: map[string]float64{}, conflicts: a.conflicts - b.conflicts, all: a.all - b.all}
	for k, v := range a.byResource {
		if d := v - b.byResource[k]; d > 0 {
			out.byResource[k] = d
		}
	}
	return out
}

func (a apiWrites) total() float64 {
	t := 0.0
	for _, v := range a.byResource {
		t += v
	}
	return t
}

// namespaceWrites are the writes to namespaces. A round creates and
// deletes none of its own, so these are someone else's tests starting or
// ending while it runs.
func (a apiWrites) namespaceWrites() float64 {
	t := 0.0
	for k, v := range a.byResource {
		if k == "namespaces" || strings.HasPrefix(k, "namespaces/") {
			t += v
		}
	}
	return t
}

// top lists the n resources with the most writes, as "pods 2000".
func (a apiWrites) top(n int) string {
	keys := make([]string, 0, len(a.byResource))
	for k := range a.byResource {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return a.byResource[keys[i]] > a.byResource[keys[j]] })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, a.byResource[k]))
	}
	return strings.Join(parts, ", ")
}

// writerRequests are the writer's writes (the baseline's or Loom's) among
// the API server's, for a writer whose own requests are not counted (Loom
// in its own process): the API server counts requests by resource and
// verb, not by client (Loom's user agent, "loom", is in no metric). While
// a round runs, the children's resources and the parents' status are
// written by the writer alone: the creator creates parents, the
// controller-manager writes Deployments' status, never their spec, and
// nothing else writes ConfigMaps or Services there. Events are counted
// only on a bare cluster: elsewhere the controller-manager writes Events
// too, and they cannot be told apart (Events is then 0).
func (a apiWrites) writerRequests(bare bool) requests {
	var r requests
	for _, gvr := range childResources {
		r.Children += int64(a.byResource[gvr.Resource])
	}
	r.Status = int64(a.byResource[myResourceGVR.Resource+"/status"])
	if bare {
		r.Events = int64(a.byResource["events"])
	}
	return r
}

// writerRequestsIn are the writer's writes among both API servers' of a
// remote phase: the local one's (writerRequests) and the children it
// wrote in the workload cluster, where Loom alone writes children (its
// Events go to the local cluster). workload is empty in other phases.
func writerRequestsIn(local, workload apiWrites, bare bool) requests {
	r := local.writerRequests(bare)
	r.Children += workload.writerRequests(true).Children
	return r
}
