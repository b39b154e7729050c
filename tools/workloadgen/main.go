// Command workloadgen writes the issue-6 benchmark scenario (see package
// workload) into a folder for pilot-discovery's --config-dir, or, with
// --update, rewrites one VirtualService's prefix as the benchmark's update.
// --authorization-policies and --request-authentications add gateway
// policies (in security.yaml) beside the usual scenario.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

func main() {
	out := flag.String("out", "", "folder to write (required)")
	services := flag.Int("services", 100, "N: ServiceEntries and VirtualServices")
	endpoints := flag.Int("endpoints", workload.DefaultEndpoints, "E: endpoints per ServiceEntry")
	authzPolicies := flag.Int("authorization-policies", 0, "AuthorizationPolicies selecting the ingress gateway (ALLOW, DENY and AUDIT), in security.yaml")
	requestAuthns := flag.Int("request-authentications", 0, "RequestAuthentications selecting the ingress gateway (one inline-JWKS JWT rule each), in security.yaml")
	envoyFilters := flag.Int("envoy-filters", 0, "EnvoyFilters on the ingress gateway (rate limit, Lua, listener, route and cluster patches), in envoyfilters.yaml")
	update := flag.Int("update", -1, "if >= 0, only rewrite VirtualService app-UPDATE with --prefix")
	prefix := flag.String("prefix", workload.UpdatePrefix, "the first route's prefix written by --update")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: workloadgen --out DIR [--services N] [--endpoints E] [--authorization-policies A] [--request-authentications R] [--envoy-filters F] [--update I --prefix P]")
		os.Exit(2)
	}
	var err error
	if *update >= 0 {
		err = workload.WriteUpdate(*out, *update, *services, *prefix)
	} else {
		err = workload.Write(*out, workload.Options{Services: *services, Endpoints: *endpoints,
			AuthorizationPolicies: *authzPolicies, RequestAuthentications: *requestAuthns, EnvoyFilters: *envoyFilters})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
