package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loom-operator/loom/internal/version"
)

// buildInfoGauge is loom_build_info, as Prometheus exporters export their
// build: a gauge at 1 whose labels name the build (version, VCS revision,
// Go version), so that a query can join it or count the versions running.
func buildInfoGauge(info version.Info) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "loom_build_info",
		Help: "Always 1; its labels say which build of Loom runs: the version, the VCS revision and the Go version (as loom version prints them).",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(info.Version, info.Revision, info.GoVersion).Set(1)
	return g
}
