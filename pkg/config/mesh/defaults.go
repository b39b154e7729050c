package mesh

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
)

// Names istiod uses for the defaults below and for finding its mesh config.
const (
	// DefaultRootNamespace is istiod's default rootNamespace (and the
	// namespace istiod itself runs in, where it reads its ConfigMap).
	DefaultRootNamespace = "istio-system"
	// ConfigMapName is the ConfigMap istiod reads its mesh config from
	// ("istio-<revision>" for a revision other than "default").
	ConfigMapName = "istio"
	// ConfigMapKey is the key of that ConfigMap holding the MeshConfig YAML.
	ConfigMapKey = "mesh"
	// DefaultAccessLogProvider is the name of the built-in file access
	// log provider a Telemetry can name: Envoy's file logger to stdout.
	DefaultAccessLogProvider = "envoy"
)

// DefaultProxyConfig returns istiod's default for defaultConfig, the
// ProxyConfig every proxy starts from (istiod's DefaultProxyConfig in
// pkg/config/mesh). Most of it matters only to istio-agent; it is kept
// whole so that a merged mesh config equals istiod's.
func DefaultProxyConfig() *meshconfig.ProxyConfig {
	return &meshconfig.ProxyConfig{
		ConfigPath:               "./etc/istio/proxy",
		ClusterName:              &meshconfig.ProxyConfig_ServiceCluster{ServiceCluster: "istio-proxy"},
		DrainDuration:            durationpb.New(45 * time.Second),
		TerminationDrainDuration: durationpb.New(5 * time.Second),
		ProxyAdminPort:           15000,
		ControlPlaneAuthPolicy:   meshconfig.AuthenticationPolicy_MUTUAL_TLS,
		DiscoveryAddress:         "istiod.istio-system.svc:15012",
		BinaryPath:               "/usr/local/bin/envoy",
		StatNameLength:           189,
		StatusPort:               15020,
	}
}

// DefaultMeshConfig returns istiod's default MeshConfig, the one a user's
// mesh config is applied onto (istiod's DefaultMeshConfig in
// pkg/config/mesh, release 1.29). Each call returns a new value the
// caller may change.
//
// Of note for a gateway: tracing is on but no tracer is configured (istiod
// removed the default Zipkin tracer), there is no access log file, and the
// built-in extension providers are "prometheus", "stackdriver" and "envoy"
// (a file access log to /dev/stdout).
func DefaultMeshConfig() *meshconfig.MeshConfig {
	return &meshconfig.MeshConfig{
		EnableTracing:               true,
		AccessLogFile:               "",
		AccessLogEncoding:           meshconfig.MeshConfig_TEXT,
		AccessLogFormat:             "",
		EnableEnvoyAccessLogService: false,
		ProtocolDetectionTimeout:    durationpb.New(0),
		IngressService:              "istio-ingressgateway",
		IngressControllerMode:       meshconfig.MeshConfig_STRICT,
		IngressClass:                "istio",
		TrustDomain:                 "cluster.local",
		TrustDomainAliases:          []string{},
		EnableAutoMtls:              wrapperspb.Bool(true),
		OutboundTrafficPolicy: &meshconfig.MeshConfig_OutboundTrafficPolicy{
			Mode: meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY,
		},
		InboundTrafficPolicy: &meshconfig.MeshConfig_InboundTrafficPolicy{
			Mode: meshconfig.MeshConfig_InboundTrafficPolicy_PASSTHROUGH,
		},
		LocalityLbSetting: &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(true)},
		Certificates:      []*meshconfig.Certificate{},
		DefaultConfig:     DefaultProxyConfig(),

		RootNamespace:                  DefaultRootNamespace,
		ProxyListenPort:                15001,
		ProxyInboundListenPort:         15006,
		ConnectTimeout:                 durationpb.New(10 * time.Second),
		DefaultServiceExportTo:         []string{"*"},
		DefaultVirtualServiceExportTo:  []string{"*"},
		DefaultDestinationRuleExportTo: []string{"*"},
		DnsRefreshRate:                 durationpb.New(60 * time.Second),
		ServiceSettings:                []*meshconfig.MeshConfig_ServiceSettings{},

		EnablePrometheusMerge: wrapperspb.Bool(true),
		DefaultProviders:      &meshconfig.MeshConfig_DefaultProviders{},
		ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{
			{
				Name: "prometheus",
				Provider: &meshconfig.MeshConfig_ExtensionProvider_Prometheus{
					Prometheus: &meshconfig.MeshConfig_ExtensionProvider_PrometheusMetricsProvider{},
				},
			},
			{
				Name: "stackdriver",
				Provider: &meshconfig.MeshConfig_ExtensionProvider_Stackdriver{
					Stackdriver: &meshconfig.MeshConfig_ExtensionProvider_StackdriverProvider{},
				},
			},
			{
				Name: DefaultAccessLogProvider,
				Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog{
					EnvoyFileAccessLog: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider{
						Path: "/dev/stdout",
					},
				},
			},
		},
	}
}
