package validation_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func baseDestinationRule() *networking.DestinationRule {
	return &networking.DestinationRule{
		Host:          "reviews.default.svc.cluster.local",
		TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: simpleLB(networking.LoadBalancerSettings_ROUND_ROBIN)},
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}},
		},
	}
}

type dr = networking.DestinationRule

type chlb = networking.LoadBalancerSettings_ConsistentHashLB

func simpleLB(s networking.LoadBalancerSettings_SimpleLB) *networking.LoadBalancerSettings {
	return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: s}}
}

// policy replaces the top-level traffic policy.
func policy(p *networking.TrafficPolicy) func(*dr) { return func(d *dr) { d.TrafficPolicy = p } }

// lb sets the top-level load balancer.
func lb(l *networking.LoadBalancerSettings) func(*dr) {
	return policy(&networking.TrafficPolicy{LoadBalancer: l})
}

// hash sets a consistent-hash load balancer.
func hash(c *chlb) func(*dr) {
	return lb(&networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: c}})
}

func headerKey(name string) *networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName {
	return &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: name}
}

func TestDestinationRuleHostAndSubsets(t *testing.T) {
	runCases(t, schema.DestinationRule, baseDestinationRule, []testCase[dr]{
		{name: "base is valid"},
		{name: "short host", mutate: func(d *dr) { d.Host = "reviews" }},
		{name: "wildcard host", mutate: func(d *dr) { d.Host = "*.example.com" }},
		{name: "missing host", mutate: func(d *dr) { d.Host = "" },
			want: []string{"spec.host"}, msg: "required"},
		{name: "invalid host", mutate: func(d *dr) { d.Host = "Reviews" },
			want: []string{"spec.host"}, msg: "DNS-1123"},
		{name: "no subsets", mutate: func(d *dr) { d.Subsets = nil }},
		{name: "null subset", mutate: func(d *dr) { d.Subsets[0] = nil },
			want: []string{"spec.subsets[0]"}, msg: "null"},
		{name: "subset without name", mutate: func(d *dr) { d.Subsets[0].Name = "" },
			want: []string{"spec.subsets[0].name"}, msg: "required"},
		{name: "subset name not a label", mutate: func(d *dr) { d.Subsets[0].Name = "v1.0" },
			want: []string{"spec.subsets[0].name"}, msg: "DNS-1123 label"},
		{name: "duplicate subset name", mutate: func(d *dr) { d.Subsets[1].Name = "v1" },
			want: []string{"spec.subsets[1].name"}, msg: "duplicate subset name"},
		// As in Istio, a subset without labels selects every endpoint.
		{name: "subset without labels", mutate: func(d *dr) { d.Subsets[0].Labels = nil }},
		{name: "subset with a bad label key", mutate: func(d *dr) { d.Subsets[0].Labels = map[string]string{"bad key": "v1"} },
			want: []string{`spec.subsets[0].labels["bad key"]`}, msg: "label key"},
		{name: "subset with a prefixed label key", mutate: func(d *dr) {
			d.Subsets[0].Labels = map[string]string{"app.kubernetes.io/version": "1.2.3"}
		}},
		{name: "subset traffic policy", mutate: func(d *dr) {
			d.Subsets[0].TrafficPolicy = &networking.TrafficPolicy{LoadBalancer: simpleLB(networking.LoadBalancerSettings_RANDOM)}
		}},
		{name: "empty subset traffic policy", mutate: func(d *dr) { d.Subsets[0].TrafficPolicy = &networking.TrafficPolicy{} },
			want: []string{"spec.subsets[0].trafficPolicy"}, msg: "at least one field"},
		{name: "exportTo", mutate: func(d *dr) { d.ExportTo = []string{"*"} }},
		{name: "bad exportTo", mutate: func(d *dr) { d.ExportTo = []string{"a_b"} },
			want: []string{"spec.exportTo[0]"}, msg: "namespace"},
		{name: "workload selector", mutate: func(d *dr) {
			d.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "reviews"}}
		}},
		{name: "workload selector wildcard", mutate: func(d *dr) {
			d.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "rev*"}}
		}, want: []string{`spec.workloadSelector.matchLabels["app"]`}, msg: "wildcard"},
	})
}

func TestDestinationRuleLoadBalancer(t *testing.T) {
	const p = "spec.trafficPolicy.loadBalancer"
	const ch = p + ".consistentHash"
	type locality = networking.LocalityLoadBalancerSetting
	loc := func(l *locality) func(*dr) { return lb(&networking.LoadBalancerSettings{LocalityLbSetting: l}) }
	distribute := func(to map[string]uint32) *locality {
		return &locality{Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "us-west/zone1/*", To: to}}}
	}
	failover := func(from, to string) *locality {
		return &locality{Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: from, To: to}}}
	}
	runCases(t, schema.DestinationRule, baseDestinationRule, []testCase[dr]{
		{name: "empty traffic policy", mutate: policy(&networking.TrafficPolicy{}),
			want: []string{"spec.trafficPolicy"}, msg: "at least one field"},
		{name: "least request", mutate: lb(simpleLB(networking.LoadBalancerSettings_LEAST_REQUEST))},
		{name: "unknown simple policy", mutate: lb(simpleLB(99)),
			want: []string{p + ".simple"}, msg: "not a known value"},
		{name: "hash on a header", mutate: hash(&chlb{HashKey: headerKey("x-user")})},
		{name: "hash without a key", mutate: hash(&chlb{}),
			want: []string{ch}, msg: "hash key is required"},
		{name: "hash on an empty header", mutate: hash(&chlb{HashKey: headerKey("")}),
			want: []string{ch + ".httpHeaderName"}, msg: "header name"},
		{name: "hash on source IP", mutate: hash(&chlb{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}})},
		{name: "useSourceIp false", mutate: hash(&chlb{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{}}),
			want: []string{ch + ".useSourceIp"}, msg: "nothing to hash on"},
		{name: "hash on an empty query parameter", mutate: hash(&chlb{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName{}}),
			want: []string{ch + ".httpQueryParameterName"}, msg: "must not be empty"},
		{name: "hash on a cookie", mutate: hash(&chlb{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{
			HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{Name: "session", Path: "/", Ttl: dur(time.Hour)}}})},
		{name: "cookie without a name", mutate: hash(&chlb{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{
			HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{Ttl: dur(0)}}}),
			want: []string{ch + ".httpCookie.name"}, msg: "cookie name is required"},
		{name: "cookie with a negative ttl", mutate: hash(&chlb{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{
			HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{Name: "s", Ttl: dur(-time.Second)}}}),
			want: []string{ch + ".httpCookie.ttl"}, msg: "negative"},
		{name: "deprecated minimum ring size", mutate: hash(&chlb{HashKey: headerKey("x"), MinimumRingSize: 1024})},
		{name: "minimum ring size too large", mutate: hash(&chlb{HashKey: headerKey("x"), MinimumRingSize: 1 << 24}),
			want: []string{ch + ".minimumRingSize"}, msg: "at most"},
		{name: "minimum ring size with an algorithm", mutate: hash(&chlb{HashKey: headerKey("x"), MinimumRingSize: 1024,
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{}}}),
			want: []string{ch + ".minimumRingSize"}, msg: "cannot be combined"},
		{name: "ring hash too large", mutate: hash(&chlb{HashKey: headerKey("x"),
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{MinimumRingSize: 1 << 24}}}),
			want: []string{ch + ".ringHash.minimumRingSize"}, msg: "at most"},
		{name: "maglev", mutate: hash(&chlb{HashKey: headerKey("x"),
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 65537}}})},
		{name: "maglev without table size", mutate: hash(&chlb{HashKey: headerKey("x"),
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{}}}),
			want: []string{ch + ".maglev.tableSize"}, msg: "required"},
		{name: "maglev table size not prime", mutate: hash(&chlb{HashKey: headerKey("x"),
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 65536}}}),
			want: []string{ch + ".maglev.tableSize"}, msg: "prime"},
		{name: "maglev table size too large", mutate: hash(&chlb{HashKey: headerKey("x"),
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 5000011}}}),
			want: []string{ch + ".maglev.tableSize"}, msg: "less than"},

		{name: "locality distribute", mutate: loc(distribute(map[string]uint32{"us-west/zone1/*": 80, "us-west/zone2/*": 20}))},
		{name: "locality weights not adding up", mutate: loc(distribute(map[string]uint32{"us-west/zone1/*": 80, "us-west/zone2/*": 10})),
			want: []string{p + ".localityLbSetting.distribute[0].to"}, msg: "add up to 90"},
		{name: "locality weight 0", mutate: loc(distribute(map[string]uint32{"us-west/zone1/*": 100, "us-west/zone2/*": 0})),
			want: []string{p + `.localityLbSetting.distribute[0].to["us-west/zone2/*"]`}, msg: "1-100"},
		{name: "locality without destinations", mutate: loc(distribute(nil)),
			want: []string{p + ".localityLbSetting.distribute[0].to"}, msg: "at least one"},
		{name: "locality wildcard in the middle", mutate: loc(&locality{Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{
			{From: "us-west/*/a", To: map[string]uint32{"us-west": 100}}}}),
			want: []string{p + ".localityLbSetting.distribute[0].from"}, msg: "at the end"},
		{name: "locality failover", mutate: loc(failover("us-east", "us-west"))},
		{name: "failover to the same region", mutate: loc(failover("us-east", "us-east")),
			want: []string{p + ".localityLbSetting.failover[0].to"}, msg: "different region"},
		{name: "failover with a zone", mutate: loc(failover("us-east/zone1", "us-west")),
			want: []string{p + ".localityLbSetting.failover[0].from"}, msg: "single region"},
		{name: "failover without a target", mutate: loc(failover("us-east", "")),
			want: []string{p + ".localityLbSetting.failover[0].to"}, msg: "required"},
		{name: "distribute and failover", mutate: loc(&locality{
			Distribute: distribute(map[string]uint32{"us-west": 100}).Distribute,
			Failover:   failover("us-east", "us-west").Failover,
		}), want: []string{p + ".localityLbSetting"}, msg: "mutually exclusive"},
		{name: "empty failover priority label", mutate: loc(&locality{FailoverPriority: []string{""}}),
			want: []string{p + ".localityLbSetting.failoverPriority[0]"}, msg: "must not be empty"},

		{name: "warmup duration", mutate: lb(&networking.LoadBalancerSettings{WarmupDurationSecs: dur(time.Minute)})},
		{name: "zero warmup duration", mutate: lb(&networking.LoadBalancerSettings{WarmupDurationSecs: dur(0)}),
			want: []string{p + ".warmupDurationSecs"}, msg: "at least 1ms"},
		{name: "warmup", mutate: lb(&networking.LoadBalancerSettings{Warmup: &networking.WarmupConfiguration{
			Duration: dur(time.Minute), MinimumPercent: wrapperspb.Double(10), Aggression: wrapperspb.Double(1.5)}})},
		{name: "warmup and warmupDurationSecs", mutate: lb(&networking.LoadBalancerSettings{WarmupDurationSecs: dur(time.Minute),
			Warmup: &networking.WarmupConfiguration{Duration: dur(time.Minute)}}),
			want: []string{p + ".warmup"}, msg: "mutually exclusive"},
		{name: "warmup without duration", mutate: lb(&networking.LoadBalancerSettings{Warmup: &networking.WarmupConfiguration{}}),
			want: []string{p + ".warmup.duration"}, msg: "required"},
		{name: "warmup minimum percent above 100", mutate: lb(&networking.LoadBalancerSettings{Warmup: &networking.WarmupConfiguration{
			Duration: dur(time.Minute), MinimumPercent: wrapperspb.Double(101)}}),
			want: []string{p + ".warmup.minimumPercent"}, msg: "0-100"},
		{name: "warmup aggression below 1", mutate: lb(&networking.LoadBalancerSettings{Warmup: &networking.WarmupConfiguration{
			Duration: dur(time.Minute), Aggression: wrapperspb.Double(0.5)}}),
			want: []string{p + ".warmup.aggression"}, msg: "at least 1"},
	})
}

func TestDestinationRulePolicies(t *testing.T) {
	const p = "spec.trafficPolicy"
	type cp = networking.ConnectionPoolSettings
	type tcpS = networking.ConnectionPoolSettings_TCPSettings
	type httpS = networking.ConnectionPoolSettings_HTTPSettings
	type od = networking.OutlierDetection
	type ctls = networking.ClientTLSSettings
	pool := func(c *cp) func(*dr) { return policy(&networking.TrafficPolicy{ConnectionPool: c}) }
	outlier := func(o *od) func(*dr) { return policy(&networking.TrafficPolicy{OutlierDetection: o}) }
	tls := func(c *ctls) func(*dr) { return policy(&networking.TrafficPolicy{Tls: c}) }
	ports := func(pl ...*networking.TrafficPolicy_PortTrafficPolicy) func(*dr) {
		return policy(&networking.TrafficPolicy{PortLevelSettings: pl})
	}
	portLB := func(n uint32) *networking.TrafficPolicy_PortTrafficPolicy {
		return &networking.TrafficPolicy_PortTrafficPolicy{Port: &networking.PortSelector{Number: n},
			LoadBalancer: simpleLB(networking.LoadBalancerSettings_LEAST_REQUEST)}
	}
	const (
		simple = networking.ClientTLSSettings_SIMPLE
		mutual = networking.ClientTLSSettings_MUTUAL
	)
	runCases(t, schema.DestinationRule, baseDestinationRule, []testCase[dr]{
		{name: "connection pool", mutate: pool(&cp{
			Tcp: &tcpS{MaxConnections: 100, ConnectTimeout: dur(30 * time.Millisecond), IdleTimeout: dur(time.Hour),
				TcpKeepalive: &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Time: dur(7200 * time.Second), Interval: dur(75 * time.Second)}},
			Http: &httpS{Http1MaxPendingRequests: 10, Http2MaxRequests: 100, MaxRequestsPerConnection: 1, MaxRetries: 3,
				IdleTimeout: dur(time.Minute), H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE},
		})},
		{name: "empty connection pool", mutate: pool(&cp{}),
			want: []string{p + ".connectionPool"}, msg: "tcp, http"},
		{name: "negative max connections", mutate: pool(&cp{Tcp: &tcpS{MaxConnections: -1}}),
			want: []string{p + ".connectionPool.tcp.maxConnections"}, msg: "negative"},
		{name: "zero connect timeout", mutate: pool(&cp{Tcp: &tcpS{ConnectTimeout: dur(0)}}),
			want: []string{p + ".connectionPool.tcp.connectTimeout"}, msg: "at least 1ms"},
		{name: "sub-millisecond idle timeout", mutate: pool(&cp{Tcp: &tcpS{IdleTimeout: dur(1500 * time.Microsecond)}}),
			want: []string{p + ".connectionPool.tcp.idleTimeout"}, msg: "milliseconds"},
		{name: "keepalive in milliseconds", mutate: pool(&cp{Tcp: &tcpS{TcpKeepalive: &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{
			Time: dur(1500 * time.Millisecond)}}}),
			want: []string{p + ".connectionPool.tcp.tcpKeepalive.time"}, msg: "whole number of seconds"},
		{name: "negative pending requests", mutate: pool(&cp{Http: &httpS{Http1MaxPendingRequests: -1}}),
			want: []string{p + ".connectionPool.http.http1MaxPendingRequests"}, msg: "negative"},
		{name: "negative http2 requests and retries", mutate: pool(&cp{Http: &httpS{Http2MaxRequests: -1, MaxRetries: -2}}),
			want: []string{p + ".connectionPool.http.http2MaxRequests", p + ".connectionPool.http.maxRetries"}, msg: "negative"},
		{name: "negative concurrent streams", mutate: pool(&cp{Http: &httpS{MaxConcurrentStreams: -1, MaxRequestsPerConnection: -1}}),
			want: []string{p + ".connectionPool.http.maxRequestsPerConnection", p + ".connectionPool.http.maxConcurrentStreams"}, msg: "negative"},
		{name: "UPGRADE with client protocol", mutate: pool(&cp{Http: &httpS{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE, UseClientProtocol: true}}),
			want: []string{p + ".connectionPool.http.useClientProtocol"}, msg: "UPGRADE"},
		{name: "unknown upgrade policy", mutate: pool(&cp{Http: &httpS{H2UpgradePolicy: 9}}),
			want: []string{p + ".connectionPool.http.h2UpgradePolicy"}, msg: "not a known value"},
		{name: "zero HTTP/2 keepalive interval", mutate: pool(&cp{Http: &httpS{Http2KeepAlive: &networking.ConnectionPoolSettings_HTTPSettings_ConnectionKeepalive{Interval: dur(0)}}}),
			want: []string{p + ".connectionPool.http.http2KeepAlive.interval"}, msg: "at least 1ms"},

		{name: "outlier detection", mutate: outlier(&od{Consecutive_5XxErrors: wrapperspb.UInt32(5), Interval: dur(10 * time.Second),
			BaseEjectionTime: dur(30 * time.Second), MaxEjectionPercent: 50, MinHealthPercent: 10,
			SplitExternalLocalOriginErrors: true, ConsecutiveLocalOriginFailures: wrapperspb.UInt32(3),
			OutlierDetectionHttpErrorCodes: []uint32{500, 503}})},
		{name: "negative consecutive errors", mutate: outlier(&od{ConsecutiveErrors: -1}),
			want: []string{p + ".outlierDetection.consecutiveErrors"}, msg: "negative"},
		{name: "zero interval", mutate: outlier(&od{Interval: dur(0)}),
			want: []string{p + ".outlierDetection.interval"}, msg: "at least 1ms"},
		{name: "sub-millisecond ejection time", mutate: outlier(&od{BaseEjectionTime: dur(time.Microsecond * 1001)}),
			want: []string{p + ".outlierDetection.baseEjectionTime"}, msg: "milliseconds"},
		{name: "max ejection above 100", mutate: outlier(&od{MaxEjectionPercent: 101}),
			want: []string{p + ".outlierDetection.maxEjectionPercent"}, msg: "0-100"},
		{name: "negative min health", mutate: outlier(&od{MinHealthPercent: -1}),
			want: []string{p + ".outlierDetection.minHealthPercent"}, msg: "0-100"},
		{name: "local origin failures without split", mutate: outlier(&od{ConsecutiveLocalOriginFailures: wrapperspb.UInt32(3)}),
			want: []string{p + ".outlierDetection.consecutiveLocalOriginFailures"}, msg: "splitExternalLocalOriginErrors"},
		{name: "error code out of range", mutate: outlier(&od{OutlierDetectionHttpErrorCodes: []uint32{503, 99}}),
			want: []string{p + ".outlierDetection.outlierDetectionHttpErrorCodes[1]"}, msg: "100-599"},

		{name: "tls SIMPLE", mutate: tls(&ctls{Mode: simple, Sni: "reviews.example.com", CaCertificates: "/ca.pem"})},
		{name: "tls DISABLE", mutate: tls(&ctls{Mode: networking.ClientTLSSettings_DISABLE})},
		{name: "tls ISTIO_MUTUAL", mutate: tls(&ctls{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL})},
		{name: "tls MUTUAL with files", mutate: tls(&ctls{Mode: mutual, ClientCertificate: "/c.pem", PrivateKey: "/k.pem"})},
		{name: "tls MUTUAL with a credential", mutate: tls(&ctls{Mode: mutual, CredentialName: "client-cert"})},
		{name: "tls MUTUAL without certificates", mutate: tls(&ctls{Mode: mutual}),
			want: []string{p + ".tls"}, msg: "needs a credentialName"},
		{name: "tls MUTUAL without key", mutate: tls(&ctls{Mode: mutual, ClientCertificate: "/c.pem"}),
			want: []string{p + ".tls.privateKey"}, msg: "privateKey"},
		{name: "tls MUTUAL without certificate", mutate: tls(&ctls{Mode: mutual, PrivateKey: "/k.pem"}),
			want: []string{p + ".tls.clientCertificate"}, msg: "clientCertificate"},
		{name: "tls credential and files", mutate: tls(&ctls{Mode: mutual, CredentialName: "c", ClientCertificate: "/c.pem"}),
			want: []string{p + ".tls.clientCertificate"}, msg: "together with credentialName"},
		{name: "tls insecure with a CA", mutate: tls(&ctls{Mode: simple, InsecureSkipVerify: wrapperspb.Bool(true), CaCertificates: "/ca.pem"}),
			want: []string{p + ".tls.caCertificates"}, msg: "insecureSkipVerify"},
		{name: "tls insecure with SANs", mutate: tls(&ctls{Mode: simple, InsecureSkipVerify: wrapperspb.Bool(true), SubjectAltNames: []string{"a"}}),
			want: []string{p + ".tls.subjectAltNames"}, msg: "insecureSkipVerify"},
		{name: "tls unknown mode", mutate: tls(&ctls{Mode: 8}),
			want: []string{p + ".tls.mode"}, msg: "not a known value"},

		{name: "port level settings", mutate: ports(portLB(80), &networking.TrafficPolicy_PortTrafficPolicy{
			Port: &networking.PortSelector{Number: 443}, Tls: &ctls{Mode: simple}})},
		{name: "port level without port", mutate: ports(&networking.TrafficPolicy_PortTrafficPolicy{Tls: &ctls{Mode: simple}}),
			want: []string{p + ".portLevelSettings[0].port"}, msg: "required"},
		{name: "port level port 0", mutate: ports(portLB(0)),
			want: []string{p + ".portLevelSettings[0].port.number"}, msg: "1-65535"},
		{name: "duplicate port level", mutate: ports(portLB(80), portLB(80)),
			want: []string{p + ".portLevelSettings[1].port.number"}, msg: "duplicate port 80"},
		{name: "empty port level", mutate: ports(&networking.TrafficPolicy_PortTrafficPolicy{Port: &networking.PortSelector{Number: 80}}),
			want: []string{p + ".portLevelSettings[0]"}, msg: "at least one of"},
		{name: "null port level", mutate: ports(nil),
			want: []string{p + ".portLevelSettings[0]"}, msg: "null"},
		{name: "invalid port level policy", mutate: ports(&networking.TrafficPolicy_PortTrafficPolicy{
			Port: &networking.PortSelector{Number: 80}, OutlierDetection: &od{MaxEjectionPercent: 200}}),
			want: []string{p + ".portLevelSettings[0].outlierDetection.maxEjectionPercent"}, msg: "0-100"},

		{name: "tunnel", mutate: policy(&networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{
			Protocol: "CONNECT", TargetHost: "proxy.example.com", TargetPort: 3128}})},
		{name: "tunnel to an IP", mutate: policy(&networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{
			TargetHost: "10.0.0.1", TargetPort: 3128}})},
		{name: "tunnel with a bad protocol", mutate: policy(&networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{
			Protocol: "GET", TargetHost: "proxy.example.com", TargetPort: 3128}}),
			want: []string{p + ".tunnel.protocol"}, msg: "CONNECT"},
		{name: "tunnel with a bad host", mutate: policy(&networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{
			TargetHost: "proxy_1", TargetPort: 3128}}),
			want: []string{p + ".tunnel.targetHost"}, msg: "FQDN or an IP"},
		{name: "tunnel without a port", mutate: policy(&networking.TrafficPolicy{Tunnel: &networking.TrafficPolicy_TunnelSettings{
			TargetHost: "proxy.example.com"}}),
			want: []string{p + ".tunnel.targetPort"}, msg: "1-65535"},
		{name: "tunnel and proxy protocol", mutate: policy(&networking.TrafficPolicy{
			Tunnel:        &networking.TrafficPolicy_TunnelSettings{TargetHost: "proxy.example.com", TargetPort: 3128},
			ProxyProtocol: &networking.TrafficPolicy_ProxyProtocol{}}),
			want: []string{p}, msg: "mutually exclusive"},
		{name: "unknown proxy protocol version", mutate: policy(&networking.TrafficPolicy{
			ProxyProtocol: &networking.TrafficPolicy_ProxyProtocol{Version: 2}}),
			want: []string{p + ".proxyProtocol.version"}, msg: "not a known value"},
		{name: "retry budget", mutate: policy(&networking.TrafficPolicy{RetryBudget: &networking.TrafficPolicy_RetryBudget{
			Percent: wrapperspb.Double(20), MinRetryConcurrency: 3, BudgetInterval: dur(time.Second)}})},
		{name: "retry budget above 100", mutate: policy(&networking.TrafficPolicy{RetryBudget: &networking.TrafficPolicy_RetryBudget{
			Percent: wrapperspb.Double(120)}}),
			want: []string{p + ".retryBudget.percent"}, msg: "0-100"},
		{name: "zero retry budget interval", mutate: policy(&networking.TrafficPolicy{RetryBudget: &networking.TrafficPolicy_RetryBudget{
			BudgetInterval: dur(0)}}),
			want: []string{p + ".retryBudget.budgetInterval"}, msg: "at least 1ms"},
	})
}
