// Command loom is a Kubernetes operator driven by templates. It renders the
// children of custom resources from a folder of YAML templates, applies them
// with server-side apply, and reports their readiness in the parent's status.
package main

import (
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

func main() {
	// Helm's SDK, which renders chart sets, warns through log/slog: its
	// warnings join Loom's own log, structured as klog writes it.
	slog.SetDefault(slog.New(logr.ToSlogHandler(klog.Background())))
	os.Exit(exitCode(newRootCommand().ExecuteC()))
}
