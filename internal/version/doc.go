// Package version says which build of Loom is running: the release version
// (set at link time, or the main module's version that the Go toolchain
// stamps), the VCS revision it was built from, and the Go toolchain and
// platform.
//
// Data flows one way: the linker's -X flag and runtime/debug.ReadBuildInfo
// go in, an Info value comes out. Get reads the running binary; FromBuildInfo
// is the same computation over a given build info, a pure function for tests.
// The package imports nothing of Loom's or of client-go, so `loom version`,
// a loom_build_info metric or a User-Agent can all use it.
package version
