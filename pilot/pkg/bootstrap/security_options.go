package bootstrap

import (
	"errors"
	"slices"
	"time"
)

// SecurityOptions configure the TLS ADS port (Istio's :15012) and who may
// use it and the debug endpoints.
type SecurityOptions struct {
	// SecureGRPCAddr is where ADS is served over TLS to authenticated
	// clients; empty means no secure port.
	SecureGRPCAddr string
	// TLSCertFile and TLSKeyFile are the serving key pair, reread when
	// they change. Without them, Kubernetes mode keeps a self-signed CA
	// and certificate in a Secret in PodNamespace; file mode serves no
	// secure port.
	TLSCertFile string
	TLSKeyFile  string
	// TLSReloadInterval is how often the key pair files are reread behind
	// file-system events; zero means security.DefaultReloadInterval.
	TLSReloadInterval time.Duration
	// TLSSANs are further DNS names of the self-signed serving certificate.
	TLSSANs []string
	// ClientCAFile verifies client certificates (identity from their
	// spiffe URI SAN); empty means tokens only.
	ClientCAFile string
	// TokenAudiences are the audiences a ServiceAccount token on the
	// secure port must be for; nil means wayfinder and istio-ca.
	TokenAudiences []string
	// DebugAdminNamespaces are the namespaces whose ServiceAccounts may
	// read every debug endpoint in Kubernetes mode; nil means PodNamespace,
	// istio-system and kube-system.
	DebugAdminNamespaces []string
}

// DefaultTokenAudiences are Wayfinder's own and the one Istio's proxies
// request for istiod (istio-ca), so Istio bootstraps keep working.
var DefaultTokenAudiences = []string{"wayfinder", "istio-ca"}

// DefaultDebugAdminNamespaces are the debug admin namespaces besides
// Wayfinder's own.
var DefaultDebugAdminNamespaces = []string{"istio-system", "kube-system"}

func (o *SecurityOptions) applyDefaults(podNamespace string) {
	if o.TokenAudiences == nil {
		o.TokenAudiences = slices.Clone(DefaultTokenAudiences)
	}
	if o.DebugAdminNamespaces == nil {
		if podNamespace != "" {
			o.DebugAdminNamespaces = append(o.DebugAdminNamespaces, podNamespace)
		}
		o.DebugAdminNamespaces = append(o.DebugAdminNamespaces, DefaultDebugAdminNamespaces...)
	}
}

func (o *SecurityOptions) validate(kubernetesMode bool) error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	if !kubernetesMode && o.SecureGRPCAddr != "" && o.TLSCertFile != "" && o.ClientCAFile == "" {
		return errors.New("file mode has no TokenReview: the secure ADS port needs --client-ca-file to authenticate clients")
	}
	return nil
}
