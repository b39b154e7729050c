// Command pilot-discovery is Wayfinder's control plane: it reads Istio
// networking config and serves it to Envoy gateways over ADS.
package main

import (
	"fmt"
	"os"

	"github.com/wayfinder-dev/wayfinder/pilot/cmd/pilot-discovery/app"
)

func main() {
	if err := app.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "pilot-discovery:", err)
		os.Exit(1)
	}
}
