// Command gen writes the Gateway API spec schemas that pkg/config/manifest
// embeds (see package crdschema). `go generate ./pkg/config/manifest`
// runs it; TestGatewayAPISchemasUpToDate fails when its output is stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest/internal/crdschema"
)

func main() {
	crds := flag.String("crds", "", "directory with the CRDs' kustomization.yaml")
	out := flag.String("out", "", "file to write")
	flag.Parse()
	if *crds == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: gen -crds DIR -out FILE")
		os.Exit(2)
	}
	data, err := crdschema.Generate(*crds)
	if err == nil {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
