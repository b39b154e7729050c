package featuretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/cli"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// localRateLimitYAML is Istio's local rate limit task for the ingress
// gateway (an HTTP_FILTER INSERT_BEFORE the router), a patch that matches
// nothing (a port no gateway listens on), and a listener MERGE whose
// result Envoy would reject (a negative buffer limit cannot be; a drain
// type out of range can).
const localRateLimitYAML = `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: ratelimit, namespace: istio-system}
spec:
  workloadSelector: {labels: {istio: ingressgateway}}
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: GATEWAY
      listener:
        filterChain:
          filter:
            name: envoy.filters.network.http_connection_manager
            subFilter: {name: envoy.filters.http.router}
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.local_ratelimit
        typed_config:
          "@type": type.googleapis.com/udpa.type.v1.TypedStruct
          type_url: type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
          value:
            stat_prefix: http_local_rate_limiter
            token_bucket: {max_tokens: 10, tokens_per_fill: 10, fill_interval: 60s}
            filter_enabled: {runtime_key: local_rate_limit_enabled, default_value: {numerator: 100, denominator: HUNDRED}}
            filter_enforced: {runtime_key: local_rate_limit_enforced, default_value: {numerator: 100, denominator: HUNDRED}}
  - applyTo: LISTENER
    match: {context: GATEWAY, listener: {portNumber: 9999}}
    patch:
      operation: MERGE
      value: {per_connection_buffer_limit_bytes: 1024}
`

func hcmOf(l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			cm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(cm) == nil {
				return cm
			}
		}
	}
	return nil
}

// Istio's local rate limit recipe reaches the gateway (the filter before
// the router), a patch that matches nothing is reported on the
// EnvoyFilter, and its status counts what each patch did; a gateway that
// rejects the patched listener gets it again without the patch (the patch
// withheld), converges, and the EnvoyFilter says why.
func TestEnvoyFilterRecipeStatusAndRejection(t *testing.T) {
	files := baseFiles()
	files["ratelimit.yaml"] = localRateLimitYAML
	e := newEnv(t, files)
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "the local rate limit filter", func(s adsc.State) bool {
		return allACKed(s) && slices.Contains(filterNames(gatewayHCM(s)), "envoy.filters.http.local_ratelimit")
	})
	names := filterNames(gatewayHCM(s))
	if i := slices.Index(names, "envoy.filters.http.local_ratelimit"); i < 0 || i+1 >= len(names) || names[i+1] != "envoy.filters.http.router" {
		t.Errorf("HTTP filters %v: want local_ratelimit right before the router", names)
	}
	state := func() (debugapi.ConfigzStatus, bool) {
		cz := e.configz()
		i := slices.IndexFunc(cz.Status, func(st debugapi.ConfigzStatus) bool { return st.Kind == "EnvoyFilter" && st.Name == "ratelimit" })
		if i < 0 {
			return debugapi.ConfigzStatus{}, false
		}
		return cz.Status[i], true
	}
	poll.Until(t, "the EnvoyFilter's patch counts", func() bool {
		st, ok := state()
		return ok && st.Gateways == 1 && st.Acked == 1 && len(st.Patches) == 2 &&
			st.Patches[0].Changed == 1 && st.Patches[1].Matched == 0
	})
	st, _ := state()
	if !slices.ContainsFunc(st.Errors, func(e debugapi.ConfigzError) bool {
		return e.Warning && strings.HasPrefix(e.Field, "spec.configPatches[1]")
	}) {
		t.Errorf("no warning for the patch that matches nothing: %+v", st.Errors)
	}

	// proxy-config shows the listeners with and without the patches.
	clients, err := cli.NewClients(cli.ClientOptions{Addrs: []string{e.server.HTTPAddr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	cl, id, err := cli.ResolveProxy(context.Background(), clients, "gw-1.istio-system")
	if err != nil {
		t.Fatal(err)
	}
	for _, without := range []bool{false, true} {
		dump, err := cli.FetchConfigDump(context.Background(), cl, id, without)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := cli.WriteConfig(&out, dump, cli.ConfigOptions{Type: "listeners", Output: cli.OutputYAML}); err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(out.String(), "envoy.filters.http.local_ratelimit"); has == without || !strings.Contains(out.String(), "envoy.filters.http.router") {
			t.Errorf("proxy-config listeners (without EnvoyFilters: %v) shows the rate limit filter: %v", without, has)
		}
	}

	// A gateway that rejects any listener with the rate limit filter.
	rejecting := e.gateway("gw-2", publicLabels, func(typeURL string, res []*anypb.Any) error {
		for _, a := range res {
			l := &listenerv3.Listener{}
			if a.UnmarshalTo(l) == nil && slices.Contains(filterNames(hcmOf(l)), "envoy.filters.http.local_ratelimit") {
				return errors.New("rejecting the rate limit filter")
			}
		}
		return nil
	})
	waitFor(t, rejecting, "the listener again without the rejected patch", func(s adsc.State) bool {
		l, ok := s.Listeners["0.0.0.0_80"]
		return ok && allACKed(s) && !slices.Contains(filterNames(hcmOf(l)), "envoy.filters.http.local_ratelimit") &&
			hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})
	poll.Until(t, "the withheld patch on the EnvoyFilter's status", func() bool {
		st, ok := state()
		return ok && len(st.Patches) == 2 && st.Patches[0].Withheld > 0
	})
	// syncz names the patch behind the rejection.
	code, body := e.get("/debug/syncz")
	var sz debugapi.Syncz
	if err := json.Unmarshal([]byte(body), &sz); code != 200 || err != nil {
		t.Fatalf("syncz: %d %v", code, err)
	}
	named := false
	for _, p := range sz.Proxies {
		for _, ty := range p.Types {
			if n := ty.LastNack; n != nil && slices.Contains(n.EnvoyFilterPatches, "EnvoyFilter istio-system/ratelimit spec.configPatches[0] on Listener 0.0.0.0_80") {
				named = true
			}
		}
	}
	if !named {
		t.Errorf("syncz does not name the rejected patch: %s", body)
	}
}
