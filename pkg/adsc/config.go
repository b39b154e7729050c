package adsc

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/clock"
)

// DefaultInitialFetchTimeout is Envoy's default ConfigSource.initial_fetch_timeout:
// how long initialization waits for a type's first response before moving on.
const DefaultInitialFetchTimeout = 15 * time.Second

// DefaultEventLogSize is how many events a client keeps for cursors by default.
const DefaultEventLogSize = 4096

// DefaultMaxRecvMsgSize lifts gRPC's 4 MiB default: a large gateway's CDS
// response is bigger than that, and Envoy has no such limit on ADS.
const DefaultMaxRecvMsgSize = 256 << 20

// Config configures a Client. Address and Node are required.
type Config struct {
	// Address is the control plane's host:port, dialed in plaintext unless
	// TLS is set.
	Address string
	// TLS, when set, dials over TLS with this config (a secure ADS port:
	// RootCAs to verify the server, ServerName, and Certificates to
	// present a client certificate).
	TLS *tls.Config
	// Token, when set, is sent as "authorization: Bearer TOKEN" metadata on
	// the stream, as Istio's proxies send their ServiceAccount token. It
	// needs TLS: gRPC refuses to send it in plaintext.
	Token string
	// Node identifies the client; see IstioNode for Istio's identity.
	Node *corev3.Node
	// Logger receives debug logs of the protocol; nil discards them.
	Logger *slog.Logger
	// Reject is offered every response that decoded and validated. A non-nil
	// error NACKs the response with the error's text as error_detail and
	// keeps the previous state of that type. It runs on the client's stream
	// goroutine, so it must not call WaitFor or block on the client's events,
	// and it must not modify the resources.
	Reject func(typeURL string, resources []*anypb.Any) error
	// InitialFetchTimeout bounds each wait of the initialization (first CDS
	// response, then the first EDS response) before LDS is requested anyway.
	// Zero means DefaultInitialFetchTimeout; negative waits forever.
	InitialFetchTimeout time.Duration
	// EagerLDS requests LDS together with CDS instead of after the clusters
	// warmed. Envoy does not do this; a load generator may want the shorter
	// start-up.
	EagerLDS bool
	// SkipValidation turns off the protoc-gen-validate check of received
	// resources (Envoy always validates; a load generator may save the CPU).
	SkipValidation bool
	// EventLogSize is how many events are kept for cursors; zero means
	// DefaultEventLogSize, negative keeps every event.
	EventLogSize int
	// MaxRecvMsgSize is the largest response accepted; zero means
	// DefaultMaxRecvMsgSize.
	MaxRecvMsgSize int
	// Clock drives the initial fetch timeouts; nil means the real clock.
	Clock clock.Clock
	// DialOptions are appended to the client's own (plaintext transport,
	// message size).
	DialOptions []grpc.DialOption
}

func (c *Config) validate() error {
	var errs []error
	if c.Address == "" {
		errs = append(errs, errors.New("adsc: Config.Address is empty"))
	}
	if c.Node.GetId() == "" {
		errs = append(errs, errors.New("adsc: Config.Node is nil or has an empty id"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.InitialFetchTimeout == 0 {
		c.InitialFetchTimeout = DefaultInitialFetchTimeout
	}
	if c.EventLogSize == 0 {
		c.EventLogSize = DefaultEventLogSize
	}
	if c.MaxRecvMsgSize == 0 {
		c.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c
}

// NodeOptions is an Istio proxy's identity, the parts istiod reads from the
// node id "TYPE~IP~POD.NAMESPACE~NAMESPACE.svc.cluster.local" and metadata.
type NodeOptions struct {
	// Type is "router" (gateways, the default), "sidecar" or "proxyless".
	Type string
	// IP is the pod IP; the default is "10.0.0.1".
	IP string
	// PodName and Namespace are required.
	PodName   string
	Namespace string
	// DNSDomain defaults to NAMESPACE.svc.cluster.local.
	DNSDomain string
	// Labels become the LABELS metadata, a struct of strings.
	Labels map[string]string
	// ClusterID becomes CLUSTER_ID; the default is "Kubernetes", Istio's.
	ClusterID string
	// Metadata adds further string metadata (ISTIO_VERSION, GENERATOR, ...).
	// It cannot override LABELS, NAMESPACE or CLUSTER_ID.
	Metadata map[string]string
}

func (o NodeOptions) withDefaults() NodeOptions {
	if o.Type == "" {
		o.Type = "router"
	}
	if o.IP == "" {
		o.IP = "10.0.0.1"
	}
	if o.DNSDomain == "" {
		o.DNSDomain = o.Namespace + ".svc.cluster.local"
	}
	if o.ClusterID == "" {
		o.ClusterID = "Kubernetes"
	}
	return o
}

// NodeID is Istio's node id for o, e.g.
// "router~10.0.0.1~gw-1.istio-system~istio-system.svc.cluster.local".
func NodeID(o NodeOptions) string {
	o = o.withDefaults()
	return strings.Join([]string{o.Type, o.IP, o.PodName + "." + o.Namespace, o.DNSDomain}, "~")
}

// IstioNode builds the node an Istio proxy with identity o sends: the id from
// NodeID, metadata LABELS, NAMESPACE and CLUSTER_ID, and Envoy's user agent.
func IstioNode(o NodeOptions) *corev3.Node {
	o = o.withDefaults()
	fields := make(map[string]*structpb.Value, len(o.Metadata)+3)
	for k, v := range o.Metadata {
		fields[k] = structpb.NewStringValue(v)
	}
	labels := make(map[string]*structpb.Value, len(o.Labels))
	for k, v := range o.Labels {
		labels[k] = structpb.NewStringValue(v)
	}
	fields["LABELS"] = structpb.NewStructValue(&structpb.Struct{Fields: labels})
	fields["NAMESPACE"] = structpb.NewStringValue(o.Namespace)
	fields["CLUSTER_ID"] = structpb.NewStringValue(o.ClusterID)
	return &corev3.Node{
		Id:            NodeID(o),
		Metadata:      &structpb.Struct{Fields: fields},
		UserAgentName: "envoy",
	}
}
