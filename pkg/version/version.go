// Package version names the build of Wayfinder's binaries, so that the
// `wayfinder version` command can show client and server side by side.
package version

import (
	"runtime"
	"runtime/debug"
)

// version is set at build time by `make build`:
// -ldflags "-X github.com/wayfinder-dev/wayfinder/pkg/version.version=v1.2.3".
var version = ""

// Info describes one binary.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's Info. Without a version from the linker it is
// the main module's version when built with `go install module@version`,
// else "dev".
func Get() Info {
	v := version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return Info{Version: v, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}
