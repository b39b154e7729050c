package app

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
)

// Plaintext ADS is off in Kubernetes mode unless --grpc-addr is given;
// file mode keeps it, and file mode's listeners default to loopback.
func TestModeDefaults(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		grpc, http string
		secure     string
	}{
		{[]string{"--config-dir", "x"}, "127.0.0.1:15010", "127.0.0.1:15014", ":15012"},
		{[]string{"--kubeconfig", "k"}, "", ":15014", ":15012"},
		{[]string{"--kubeconfig", "k", "--grpc-addr", ":15010"}, ":15010", ":15014", ":15012"},
		{[]string{"--kubeconfig", "k", "--http-addr", "127.0.0.1:9", "--secure-grpc-addr", ""}, "", "127.0.0.1:9", ""},
	} {
		opts := &bootstrap.Options{}
		cmd := discoveryCommand(opts)
		if err := cmd.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		applyModeDefaults(cmd, opts)
		if opts.GRPCAddr != tc.grpc || opts.HTTPAddr != tc.http || opts.Security.SecureGRPCAddr != tc.secure {
			t.Errorf("%v: grpc %q http %q secure %q, want %q %q %q", tc.args, opts.GRPCAddr, opts.HTTPAddr, opts.Security.SecureGRPCAddr, tc.grpc, tc.http, tc.secure)
		}
		if got := opts.Security.TokenAudiences; len(got) != 2 || got[0] != "wayfinder" || got[1] != "istio-ca" {
			t.Errorf("%v: token audiences %v, want wayfinder,istio-ca", tc.args, got)
		}
	}
}

// --gateway-api is on by default; --gateway-api=false turns it off.
func TestGatewayAPIFlag(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		disabled bool
	}{
		{[]string{"--config-dir", "x"}, false},
		{[]string{"--config-dir", "x", "--gateway-api"}, false},
		{[]string{"--config-dir", "x", "--gateway-api=false"}, true},
		{[]string{"--kubeconfig", "k", "--gateway-api=false"}, true},
	} {
		opts := &bootstrap.Options{}
		cmd := discoveryCommand(opts)
		if err := cmd.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if opts.GatewayAPI.Disabled != tc.disabled {
			t.Errorf("%v: Disabled = %v, want %v", tc.args, opts.GatewayAPI.Disabled, tc.disabled)
		}
	}
	if def := discoveryCommand(&bootstrap.Options{}).Flags().Lookup("gateway-api").DefValue; def != "true" {
		t.Errorf("--gateway-api default shown as %q, want true", def)
	}
	if err := discoveryCommand(&bootstrap.Options{}).Flags().Parse([]string{"--gateway-api=maybe"}); err == nil {
		t.Error("--gateway-api=maybe accepted")
	}
}
