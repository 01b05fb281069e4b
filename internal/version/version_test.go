package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuildInfo(t *testing.T) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/loom-operator/loom", Version: "v0.0.0-20261126231500-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"},
			{Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-26T23:15:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   Info
	}{
		{name: "no build info, no linked version", want: Info{Version: Devel, GoVersion: runtime.Version(), Platform: here}},
		{name: "no build info, linked version", linked: "v1.2.3",
			want: Info{Version: "v1.2.3", GoVersion: runtime.Version(), Platform: here}},
		{name: "stamped by the toolchain", bi: stamped, want: Info{
			Version: "v0.0.0-20261126231500-0123456789ab+dirty", Revision: "0123456789abcdef0123456789abcdef01234567",
			RevisionTime: "2026-11-26T23:15:00Z", Modified: true, GoVersion: "go1.26.8", Platform: "linux/arm64"}},
		{name: "the linker's version wins over the module's", linked: "v1.2.3", bi: stamped, want: Info{
			Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567",
			RevisionTime: "2026-11-26T23:15:00Z", Modified: true, GoVersion: "go1.26.8", Platform: "linux/arm64"}},
		{name: "go test's build info: (devel), no VCS", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: Devel, GoVersion: "go1.26.8", Platform: here}},
		{name: "empty main module version", bi: &debug.BuildInfo{GoVersion: "go1.26.8"},
			want: Info{Version: Devel, GoVersion: "go1.26.8", Platform: here}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromBuildInfo(tt.linked, tt.bi)); diff != "" {
				t.Errorf("FromBuildInfo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInfoString(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{
		{name: "release", info: Info{Version: "v1.2.3", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			want: "v1.2.3 go1.26.8 linux/amd64"},
		{name: "revision shortened", info: Info{Version: "v1.2.3", Revision: "0123456789abcdef0123", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			want: "v1.2.3 (revision 0123456789ab) go1.26.8 linux/amd64"},
		{name: "modified tree", info: Info{Version: Devel, Revision: "0123456789ab", Modified: true, GoVersion: "go1.26.8", Platform: "darwin/arm64"},
			want: "(devel) (revision 0123456789ab, modified) go1.26.8 darwin/arm64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// Get reads the test binary's own build info: go test stamps no version,
// so it must fall back to Devel, or to a version the linker was given.
func TestGet(t *testing.T) {
	got := Get()
	want := Version
	if want == "" {
		want = Devel
	}
	if got.Version != want || got.GoVersion != runtime.Version() {
		t.Errorf("Get() = %+v, want version %q and Go %s", got, want, runtime.Version())
	}
}
