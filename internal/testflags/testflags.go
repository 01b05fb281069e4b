// Package testflags holds the flags that every test binary of this module
// accepts, so that `go test ./... -update` works in every package: each
// package's tests import it, and golden-file tests read Update.
package testflags

import "flag"

// Update asks golden-file tests to rewrite their golden files instead of
// comparing with them.
var Update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")
