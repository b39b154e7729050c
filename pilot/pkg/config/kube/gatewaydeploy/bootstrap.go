package gatewaydeploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	grpccredv3 "github.com/envoyproxy/go-control-plane/envoy/config/grpc_credential/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/envoystats"
)

// Paths inside the gateway pod. The ConfigMap (bootstrap and root
// certificate) and the projected token are mounted read-only.
const (
	configDir     = "/etc/wayfinder-gateway"
	bootstrapFile = "bootstrap.yaml"
	rootCertFile  = "root-cert.pem"
	tokenDir      = "/var/run/secrets/tokens"
	tokenFile     = "wayfinder-token"
	// systemRoots verify Wayfinder when no root certificate is given
	// (a serving certificate of a public CA): Debian's and Ubuntu's
	// bundle, which Envoy's official image carries.
	systemRoots = "/etc/ssl/certs/ca-certificates.crt"
	// adminPort is Envoy's admin interface, on loopback only;
	// statusPort answers /healthz/ready from Envoy's /ready for the
	// kubelet (Istio's status port).
	adminPort  = 15000
	statusPort = 15021
)

// bootstrapInput is what the bootstrap of one Gateway's proxies says.
type bootstrapInput struct {
	// Cluster is node.cluster, "NAME.NAMESPACE" of the Deployment.
	Cluster   string
	Namespace string
	Labels    map[string]string
	ClusterID string
	// XDSAddress is host:port of Wayfinder's secure ADS port.
	XDSAddress string
	// RootCert: the certificate file exists in the ConfigMap.
	RootCert bool
	// ProxyConfig is sent as PROXY_CONFIG when set (proxyconfig.go).
	ProxyConfig *meshconfig.ProxyConfig
}

// renderBootstrap renders the Envoy bootstrap of a Gateway's proxies as
// YAML: ADS over TLS to Wayfinder's secure port with the pod's projected
// ServiceAccount token, as manifests/envoy/bootstrap-tls.yaml, and the
// node metadata istiod's agent would send (NAMESPACE, CLUSTER_ID,
// LABELS). node.id carries the pod's name and IP, which only the pod
// knows: the Deployment gives it on Envoy's command line
// (--service-node), which overrides the placeholder here. The bootstrap
// is validated (ValidateAll) before it is returned.
func renderBootstrap(in bootstrapInput) ([]byte, error) {
	labels := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
		labels[k] = in.Labels[k]
	}
	fields := map[string]any{
		"NAMESPACE":  in.Namespace,
		"CLUSTER_ID": in.ClusterID,
		"LABELS":     labels,
	}
	if in.ProxyConfig != nil {
		pc, err := proxyConfigMetadata(in.ProxyConfig)
		if err != nil {
			return nil, err
		}
		fields["PROXY_CONFIG"] = pc
	}
	md, err := structpb.NewStruct(fields)
	if err != nil {
		return nil, err
	}
	roots := systemRoots
	if in.RootCert {
		roots = configDir + "/" + rootCertFile
	}
	creds, err := anypb.New(&grpccredv3.FileBasedMetadataConfig{
		SecretData:   &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tokenDir + "/" + tokenFile}},
		HeaderKey:    "authorization",
		HeaderPrefix: "Bearer ",
	})
	if err != nil {
		return nil, err
	}
	ads := &corev3.ConfigSource{ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	health, err := statusListener()
	if err != nil {
		return nil, err
	}
	b := &bootstrapv3.Bootstrap{
		Node: &corev3.Node{
			// Replaced by --service-node; kept valid for a dry run.
			Id:       "router~0.0.0.0~" + in.Cluster + "~" + in.Namespace + ".svc",
			Cluster:  in.Cluster,
			Metadata: md,
		},
		DynamicResources: &bootstrapv3.Bootstrap_DynamicResources{
			AdsConfig: &corev3.ApiConfigSource{
				ApiType:             corev3.ApiConfigSource_GRPC,
				TransportApiVersion: corev3.ApiVersion_V3,
				GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_GoogleGrpc_{GoogleGrpc: &corev3.GrpcService_GoogleGrpc{
					TargetUri:  in.XDSAddress,
					StatPrefix: "xds-grpc",
					ChannelCredentials: &corev3.GrpcService_GoogleGrpc_ChannelCredentials{
						CredentialSpecifier: &corev3.GrpcService_GoogleGrpc_ChannelCredentials_SslCredentials{
							SslCredentials: &corev3.GrpcService_GoogleGrpc_SslCredentials{
								RootCerts: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: roots}},
							}}},
					CallCredentials: []*corev3.GrpcService_GoogleGrpc_CallCredentials{{
						CredentialSpecifier: &corev3.GrpcService_GoogleGrpc_CallCredentials_FromPlugin{
							FromPlugin: &corev3.GrpcService_GoogleGrpc_CallCredentials_MetadataCredentialsFromPlugin{
								Name:       "envoy.grpc_credentials.file_based_metadata",
								ConfigType: &corev3.GrpcService_GoogleGrpc_CallCredentials_MetadataCredentialsFromPlugin_TypedConfig{TypedConfig: creds},
							}}}},
					CredentialsFactoryName: "envoy.grpc_credentials.file_based_metadata",
				}}}},
			},
			CdsConfig: ads,
			LdsConfig: proto.Clone(ads).(*corev3.ConfigSource),
		},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: []*listenerv3.Listener{health},
			Clusters: []*clusterv3.Cluster{{
				Name:                 "wayfinder-admin",
				ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
				ConnectTimeout:       durationpb.New(250 * time.Millisecond),
				LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: "wayfinder-admin",
					Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
						HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socket("127.0.0.1", adminPort)}},
					}}}}},
			}},
		},
		Admin: &bootstrapv3.Admin{Address: socket("127.0.0.1", adminPort)},
		// Per-route statistics as one metric with virtual_host and route
		// labels (see pkg/envoystats).
		StatsConfig: envoystats.StatsConfig(),
	}
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("gateway bootstrap: %w", err)
	}
	j, err := protojson.Marshal(b)
	if err != nil {
		return nil, err
	}
	// protojson varies its spacing on purpose; a round trip through
	// encoding/json and YAML gives the same bytes for the same bootstrap.
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	return yaml.Marshal(v)
}

// statusListener serves GET /healthz/ready on the status port from
// Envoy's own /ready, which answers 200 once the first configuration
// from Wayfinder is in place: the kubelet's readiness probe.
func statusListener() (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "wayfinder-status",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "wayfinder-status",
			VirtualHosts: []*routev3.VirtualHost{{Name: "status", Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/healthz/ready"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "wayfinder-admin"},
					PrefixRewrite:    "/ready",
				}},
			}}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		return nil, err
	}
	return &listenerv3.Listener{
		Name:    "wayfinder-status",
		Address: socket("0.0.0.0", statusPort),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}}}},
	}, nil
}

func socket(addr string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}
}
