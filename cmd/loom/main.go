// Command loom is a Kubernetes operator driven by templates. It renders the
// children of custom resources from a folder of YAML templates, applies them
// with server-side apply, and reports their readiness in the parent's status.
package main

import (
	"errors"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}
