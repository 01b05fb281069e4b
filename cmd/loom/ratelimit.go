package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Client-side rate limits used when the API server does not say it
// protects itself with API Priority and Fairness (APF).
const (
	fallbackQPS   = 200
	fallbackBurst = 400
)

// rateLimit is the client-side rate limit of Loom's requests.
type rateLimit struct {
	qps   float32
	burst int
	// why says how the limit was chosen, for the log.
	why string
}

// chooseRateLimit applies the flags' limit. A QPS of 0 (the default) means
// auto: no client-side limit when the API server classifies requests with
// APF, which SIG API Machinery recommends relying on instead (as
// controller-runtime and Flux do), and fallbackQPS/fallbackBurst when it
// does not or cannot be asked. A negative QPS disables the limit; a
// positive one is used as given, whatever the server does. A burst of 0
// means twice the QPS.
//
// Loom's request concurrency is bounded anyway: each of its --workers
// reconciles sends one request at a time.
func chooseRateLimit(qps float32, burst int, apf func() (bool, error)) rateLimit {
	if burst == 0 {
		burst = int(2 * qps)
	}
	switch {
	case qps < 0:
		return rateLimit{qps: -1, burst: -1, why: "disabled by --kube-api-qps"}
	case qps > 0:
		return rateLimit{qps: qps, burst: max(burst, 1), why: "set by --kube-api-qps"}
	}
	on, err := apf()
	switch {
	case err != nil:
		return rateLimit{qps: fallbackQPS, burst: fallbackBurst,
			why: fmt.Sprintf("could not ask the API server whether it has priority and fairness: %v", err)}
	case on:
		return rateLimit{qps: -1, burst: -1, why: "the API server protects itself with priority and fairness"}
	}
	return rateLimit{qps: fallbackQPS, burst: fallbackBurst, why: "the API server has no priority and fairness"}
}

// apfEnabled asks the API server whether it classifies requests with API
// Priority and Fairness: it then names the FlowSchema that matched in a
// header of every response.
func apfEnabled(ctx context.Context, cfg *rest.Config) (bool, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false, err
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("/livez/ping").String(), nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "", nil
}

// setRateLimit chooses and sets cfg's client-side rate limit, and logs it.
func setRateLimit(ctx context.Context, cfg *rest.Config, qps float32, burst int) {
	l := chooseRateLimit(qps, burst, func() (bool, error) { return apfEnabled(ctx, cfg) })
	cfg.QPS, cfg.Burst = l.qps, l.burst
	logger := klog.FromContext(ctx)
	if l.qps < 0 {
		logger.Info("No client-side rate limit", "reason", l.why)
		return
	}
	logger.Info("Client-side rate limit", "qps", l.qps, "burst", l.burst, "reason", l.why)
}
