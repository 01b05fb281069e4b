package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is Loom's release version. It is empty in the source, and a
// release build sets it at link time:
//
//	go build -ldflags "-X github.com/loom-operator/loom/internal/version.Version=v1.2.3" ./cmd/loom
//
// When it is empty, Info.Version is the main module's version as the Go
// toolchain stamped it (a pseudo-version from the checkout's commit, or
// the tag `go install module@version` fetched), else Devel.
var Version string

// Devel is Info.Version when neither the linker nor the Go toolchain gave
// a version: a build whose VCS information was not stamped (`go run`, `go
// test`, -buildvcs=false).
const Devel = "(devel)"

// Info describes one build of Loom. Its JSON form is part of `loom
// version -o json`, so field names only ever get added.
type Info struct {
	// Version is the release version (see Version).
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, when the Go
	// toolchain stamped it.
	Revision string `json:"revision,omitempty"`
	// RevisionTime is that commit's time, RFC 3339.
	RevisionTime string `json:"revisionTime,omitempty"`
	// Modified is true when the working tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform"`
}

// Get returns the Info of the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return FromBuildInfo(Version, bi)
}

// FromBuildInfo returns the Info of a build whose linker-set version is
// linked (empty when none was set) and whose build info is bi (nil when
// the binary has none). The platform is the running one's.
func FromBuildInfo(linked string, bi *debug.BuildInfo) Info {
	info := Info{Version: linked, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if info.Version == "" {
			info.Version = Devel
		}
		return info
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	if info.Version == "" {
		info.Version = Devel
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.RevisionTime = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		info.Platform = goos + "/" + goarch
	}
	return info
}

// String is the one-line form `loom version` prints, such as
// "v1.2.3 (revision 0123abcdef01, modified) go1.26.8 linux/amd64".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		fmt.Fprintf(&b, " (revision %s", rev)
		if i.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s", i.GoVersion, i.Platform)
	return b.String()
}
