// Command wayfinder is the operator's tool for a Wayfinder control plane:
// which gateways have which config (proxy-status, proxy-config), what is
// wrong with a folder or cluster of Istio config (analyze), and versions.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/wayfinder-dev/wayfinder/pilot/cmd/wayfinder/app"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/cli"
)

func main() {
	if err := app.NewRootCommand(os.Stdout).Execute(); err != nil {
		// analyze has printed its findings; the exit status says the rest.
		if !errors.Is(err, cli.ErrFindings) {
			fmt.Fprintln(os.Stderr, "wayfinder:", err)
		}
		os.Exit(1)
	}
}
