package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/version"
)

// Versions is the body of `wayfinder version -o json`.
type Versions struct {
	Client  version.Info           `json:"client"`
	Servers []debugapi.VersionInfo `json:"servers,omitempty"`
}

// VersionOptions configure version.
type VersionOptions struct {
	// ClientOnly skips asking the servers.
	ClientOnly bool
	Output     string
}

// WriteVersion prints the client's version and each replica's. A replica
// that cannot be reached is an error, after the client's line is printed.
func WriteVersion(ctx context.Context, w io.Writer, clients []*Client, opts VersionOptions) error {
	if err := checkOutput(opts.Output); err != nil {
		return err
	}
	out := Versions{Client: version.Get()}
	var firstErr error
	if !opts.ClientOnly {
		for _, c := range clients {
			var v debugapi.VersionInfo
			if err := c.Get(ctx, "/debug/version", &v); err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			if v.Replica == "" {
				v.Replica = c.Addr()
			}
			out.Servers = append(out.Servers, v)
		}
	}
	if opts.Output == OutputJSON || opts.Output == OutputYAML {
		if err := writeStructured(w, out, opts.Output); err != nil {
			return err
		}
		return firstErr
	}
	fmt.Fprintf(w, "client version: %s (%s, %s)\n", out.Client.Version, out.Client.GoVersion, out.Client.Platform)
	for _, s := range out.Servers {
		fmt.Fprintf(w, "server version: %s (%s, %s) replica %s\n", s.Version, s.GoVersion, s.Platform, s.Replica)
	}
	return firstErr
}
