package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// picker turns fuzz bytes into choices; past the end every choice is 0,
// so a short input still builds a small, complete configuration.
type picker struct {
	b []byte
	i int
}

func (p *picker) n(k int) int {
	if k <= 1 || p.i >= len(p.b) {
		if p.i < len(p.b) {
			p.i++
		}
		return 0
	}
	v := int(p.b[p.i]) % k
	p.i++
	return v
}

func (p *picker) bool() bool { return p.n(2) == 1 }

func pick[T any](p *picker, xs []T) T { return xs[p.n(len(xs))] }

// some returns between 0 and max-1 results of gen.
func some[T any](p *picker, max int, gen func(int) T) []T {
	n := p.n(max)
	out := make([]T, 0, n)
	for i := range n {
		out = append(out, gen(i))
	}
	return out
}

var (
	fuzzNamespaces = []string{"istio-system", "default", "apps"}
	fuzzProtocols  = []string{"HTTP", "HTTPS", "HTTP2", "GRPC", "TCP", "TLS", "MONGO", "http"}
	fuzzPorts      = []uint32{80, 443, 8080, 8443, 9080, 15443, 31400}
	fuzzSelectors  = []map[string]string{{"istio": "ingressgateway"}, {"istio": "eastwestgateway"}, {"app": "edge", "istio": "ingressgateway"}}
	fuzzTLSModes   = []networking.ServerTLSSettings_TLSmode{
		networking.ServerTLSSettings_SIMPLE, networking.ServerTLSSettings_MUTUAL, networking.ServerTLSSettings_PASSTHROUGH,
		networking.ServerTLSSettings_AUTO_PASSTHROUGH, networking.ServerTLSSettings_ISTIO_MUTUAL, networking.ServerTLSSettings_OPTIONAL_MUTUAL,
	}
	// fuzzCredentials name a usable certificate (with its CA), one in
	// another namespace, one holding junk, and one that does not exist.
	fuzzCredentials = []string{"gw-cert", "istio-system/gw-cert", "apps/gw-cert", "junk-cert", "missing-cert", ""}
	fuzzSubsets     = []string{"", "v1", "v2", "nope"}
)

// fuzzWorld is what one input generates, beside the objects parsed from
// its manifest half: registry Services with endpoints and Secrets.
type fuzzWorld struct {
	configs  []config.Config
	services []*model.Service
	secrets  map[string]map[string][]byte
	hosts    []string // every destination host (services, ServiceEntries, parsed objects)
	gateways []string // "NS/NAME" of every Gateway
}

// Services makes the world a registry.
func (w *fuzzWorld) Services() []*model.Service { return w.services }

// generate builds random objects from p on top of parsed (already valid)
// ones, naming hosts and gateways of both. cert and key are a usable pair.
func generate(p *picker, parsed []config.Config, cert, key []byte) *fuzzWorld {
	w := &fuzzWorld{secrets: map[string]map[string][]byte{}}
	for _, c := range parsed {
		switch s := c.Spec.(type) {
		case *networking.ServiceEntry:
			w.hosts = append(w.hosts, s.GetHosts()...)
		case *networking.Gateway:
			w.gateways = append(w.gateways, c.Namespace+"/"+c.Name)
		}
	}
	for _, ns := range fuzzNamespaces {
		w.secrets[ns+"/gw-cert"] = map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": cert}
		w.secrets[ns+"/gw-cert-cacert"] = map[string][]byte{"ca.crt": cert}
		w.secrets[ns+"/junk-cert"] = map[string][]byte{"tls.crt": []byte("junk"), "tls.key": key}
	}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1 + p.n(4) {
		ns := pick(p, fuzzNamespaces)
		svc := &model.Service{Hostname: fmt.Sprintf("svc-%d.%s.svc.cluster.local", i, ns), Namespace: ns,
			Source: config.Key{Namespace: ns, Name: fmt.Sprintf("svc-%d", i)}, CreationTimestamp: now.Add(time.Duration(i) * time.Second)}
		for j := range 1 + p.n(3) {
			proto := pick(p, []string{"HTTP", "HTTP2", "GRPC", "TCP", "TLS", "HTTPS"})
			svc.Ports = append(svc.Ports, model.Port{Name: strings.ToLower(proto) + fmt.Sprintf("-%d", j), Number: pick(p, fuzzPorts), Protocol: proto,
				TargetPort: uint32(p.n(3) * 8000)})
		}
		// Port numbers are unique, as the Kubernetes registry makes them
		// (it keeps TCP ports only).
		seen := map[uint32]bool{}
		svc.Ports = slices.DeleteFunc(svc.Ports, func(port model.Port) bool {
			dup := seen[port.Number]
			seen[port.Number] = true
			return dup
		})
		for k := range p.n(4) {
			svc.Endpoints = append(svc.Endpoints, &model.Endpoint{Address: fmt.Sprintf("10.1.%d.%d", i, k+1),
				Labels: map[string]string{"version": pick(p, []string{"v1", "v2"})}, Weight: uint32(p.n(3)),
				Locality: pick(p, []string{"", "region/zone", "region/zone/sub"})})
		}
		w.services = append(w.services, svc)
		w.hosts = append(w.hosts, svc.Hostname)
	}
	for i := range p.n(3) {
		w.add(schema.ServiceEntry, pick(p, fuzzNamespaces), fmt.Sprintf("se-%d", i), w.serviceEntry(p, i))
	}
	for i := range 1 + p.n(3) {
		ns := pick(p, fuzzNamespaces)
		name := fmt.Sprintf("gw-%d", i)
		w.add(schema.Gateway, ns, name, w.gateway(p))
		w.gateways = append(w.gateways, ns+"/"+name)
	}
	for i := range 1 + p.n(4) {
		w.add(schema.VirtualService, pick(p, fuzzNamespaces), fmt.Sprintf("vs-%d", i), w.virtualService(p))
	}
	for i := range p.n(4) {
		w.add(schema.DestinationRule, pick(p, fuzzNamespaces), fmt.Sprintf("dr-%d", i), w.destinationRule(p))
	}
	return w
}

func (w *fuzzWorld) add(kind schema.Kind, ns, name string, spec any) {
	c := config.Config{Meta: config.Meta{Kind: kind, Namespace: ns, Name: name, Source: "fuzz/" + kind.String() + "/" + ns + "/" + name,
		CreationTimestamp: time.Date(2026, 1, 1, 0, 0, len(w.configs), 0, time.UTC)}}
	switch s := spec.(type) {
	case *networking.Gateway:
		c.Spec = s
	case *networking.VirtualService:
		c.Spec = s
	case *networking.DestinationRule:
		c.Spec = s
	case *networking.ServiceEntry:
		c.Spec = s
	}
	w.configs = append(w.configs, c)
}

func (w *fuzzWorld) serviceEntry(p *picker, i int) *networking.ServiceEntry {
	se := &networking.ServiceEntry{
		Hosts:      []string{pick(p, []string{fmt.Sprintf("ext-%d.example.com", i), fmt.Sprintf("*.ext-%d.example.com", i), fmt.Sprintf("svc-%d.default.svc.cluster.local", i)})},
		Location:   pick(p, []networking.ServiceEntry_Location{networking.ServiceEntry_MESH_EXTERNAL, networking.ServiceEntry_MESH_INTERNAL}),
		Resolution: pick(p, []networking.ServiceEntry_Resolution{networking.ServiceEntry_NONE, networking.ServiceEntry_STATIC, networking.ServiceEntry_DNS, networking.ServiceEntry_DNS_ROUND_ROBIN}),
	}
	for j := range 1 + p.n(3) {
		proto := pick(p, fuzzProtocols)
		se.Ports = append(se.Ports, &networking.ServicePort{Number: pick(p, fuzzPorts), Protocol: proto, Name: fmt.Sprintf("%s-%d", strings.ToLower(proto), j),
			TargetPort: uint32(p.n(2) * 9000)})
	}
	se.Ports = slices.CompactFunc(se.Ports, func(a, b *networking.ServicePort) bool { return a.GetNumber() == b.GetNumber() })
	n := p.n(4)
	switch se.Resolution {
	case networking.ServiceEntry_NONE:
		n = 0
	case networking.ServiceEntry_STATIC:
		n = max(n, 1)
	case networking.ServiceEntry_DNS_ROUND_ROBIN:
		n = min(n, 1)
	}
	if n == 0 && se.Resolution != networking.ServiceEntry_NONE && strings.HasPrefix(se.Hosts[0], "*") {
		se.Hosts[0] = se.Hosts[0][2:]
	}
	for k := range n {
		addr := fmt.Sprintf("10.2.%d.%d", i, k+1)
		if se.Resolution == networking.ServiceEntry_DNS || se.Resolution == networking.ServiceEntry_DNS_ROUND_ROBIN {
			addr = fmt.Sprintf("backend-%d.example.org", k)
		}
		we := &networking.WorkloadEntry{Address: addr, Labels: map[string]string{"version": pick(p, []string{"v1", "v2"})},
			Weight: uint32(p.n(3)), Locality: pick(p, []string{"", "r/z"})}
		if p.bool() {
			we.Ports = map[string]uint32{se.Ports[0].GetName(): 7000 + uint32(k)}
		}
		se.Endpoints = append(se.Endpoints, we)
	}
	w.hosts = append(w.hosts, se.Hosts...)
	return se
}

func (w *fuzzWorld) gateway(p *picker) *networking.Gateway {
	gw := &networking.Gateway{Selector: pick(p, fuzzSelectors)}
	for j := range 1 + p.n(4) {
		proto := pick(p, fuzzProtocols)
		s := &networking.Server{
			Port: &networking.Port{Number: pick(p, fuzzPorts), Name: fmt.Sprintf("%s-%d", strings.ToLower(proto), j), Protocol: proto},
			Hosts: some(p, 3, func(int) string {
				return pick(p, []string{"*", "*.example.com", "a.example.com", "apps/*", "./b.example.com", "*/c.example.com"})
			}),
			Name: pick(p, []string{"", fmt.Sprintf("srv-%d", j)}),
		}
		if len(s.Hosts) == 0 {
			s.Hosts = []string{"*"}
		}
		switch strings.ToUpper(proto) {
		case "HTTPS", "TLS":
			s.Tls = &networking.ServerTLSSettings{Mode: pick(p, fuzzTLSModes), CredentialName: pick(p, fuzzCredentials[:5]),
				MinProtocolVersion: pick(p, []networking.ServerTLSSettings_TLSProtocol{networking.ServerTLSSettings_TLS_AUTO, networking.ServerTLSSettings_TLSV1_2, networking.ServerTLSSettings_TLSV1_3}),
				SubjectAltNames:    some(p, 2, func(int) string { return "spiffe://cluster.local/ns/apps/sa/client" }),
				CipherSuites: some(p, 2, func(int) string {
					return pick(p, []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384"})
				}),
			}
			switch s.Tls.Mode {
			case networking.ServerTLSSettings_ISTIO_MUTUAL, networking.ServerTLSSettings_PASSTHROUGH, networking.ServerTLSSettings_AUTO_PASSTHROUGH:
				s.Tls.CredentialName = ""
			}
		case "HTTP":
			if p.n(4) == 0 {
				s.Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
			}
		}
		gw.Servers = append(gw.Servers, s)
	}
	return gw
}

func (w *fuzzWorld) host(p *picker) string {
	if len(w.hosts) == 0 {
		return "none.example.com"
	}
	return pick(p, w.hosts)
}

func (w *fuzzWorld) destination(p *picker) *networking.Destination {
	d := &networking.Destination{Host: w.host(p), Subset: pick(p, fuzzSubsets)}
	if p.n(3) > 0 {
		d.Port = &networking.PortSelector{Number: pick(p, fuzzPorts)}
	}
	return d
}

func stringMatch(p *picker) *networking.StringMatch {
	switch p.n(4) {
	case 0:
		return &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: pick(p, []string{"/", "/api", "/api/"})}}
	case 1:
		return &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: pick(p, []string{"/", "/login", "GET"})}}
	case 2:
		return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: pick(p, []string{".*", "/v[0-9]+/.*", "^x$"})}}
	}
	return nil
}

// presence makes a missing match {}, which matches on presence.
func presence(m *networking.StringMatch) *networking.StringMatch {
	if m == nil {
		return &networking.StringMatch{}
	}
	return m
}

func percent(p *picker) *networking.Percent {
	return pick(p, []*networking.Percent{nil, {Value: 0}, {Value: 12.5}, {Value: 100}})
}

func duration(p *picker) *durationpb.Duration {
	return pick(p, []*durationpb.Duration{nil, durationpb.New(time.Millisecond), durationpb.New(1500 * time.Millisecond), durationpb.New(time.Minute)})
}

func headers(p *picker) *networking.Headers {
	if !p.bool() {
		return nil
	}
	op := func() *networking.Headers_HeaderOperations {
		op := &networking.Headers_HeaderOperations{Remove: some(p, 2, func(int) string { return "x-remove" })}
		if p.bool() {
			op.Set = map[string]string{"x-set": "1"}
		}
		if p.bool() {
			op.Add = map[string]string{"x-add": "a"}
		}
		return op
	}
	return &networking.Headers{Request: op(), Response: op()}
}

func (w *fuzzWorld) virtualService(p *picker) *networking.VirtualService {
	// Hosts may not overlap: one of the wide ones, or up to two exact ones.
	vs := &networking.VirtualService{Hosts: []string{pick(p, []string{"*", "*.example.com", "a.example.com", "b.example.com", w.host(p)})}}
	if !strings.HasPrefix(vs.Hosts[0], "*") && p.bool() {
		if other := pick(p, []string{"c.example.com", "d.example.org"}); other != vs.Hosts[0] {
			vs.Hosts = append(vs.Hosts, other)
		}
	}
	vs.Gateways = some(p, 3, func(int) string {
		if len(w.gateways) == 0 || p.n(5) == 0 {
			return "mesh"
		}
		gw := pick(p, w.gateways)
		if p.bool() {
			_, name, _ := strings.Cut(gw, "/")
			return name // relative to the VirtualService's namespace
		}
		return gw
	})
	for i := range 1 + p.n(3) {
		vs.Http = append(vs.Http, w.httpRoute(p, i))
	}
	if len(vs.Gateways) == 0 || slices.Contains(vs.Gateways, "mesh") {
		if vs.Hosts[0] == "*" {
			vs.Hosts[0] = "a.example.com"
		}
	}
	vs.Tls = some(p, 2, func(int) *networking.TLSRoute {
		return &networking.TLSRoute{
			Match: []*networking.TLSMatchAttributes{{SniHosts: []string{pick(p, vs.Hosts)}, Port: pick(p, []uint32{0, 443, 15443})}},
			Route: w.l4Routes(p),
		}
	})
	vs.Tcp = some(p, 2, func(int) *networking.TCPRoute {
		r := &networking.TCPRoute{Route: w.l4Routes(p)}
		if p.bool() {
			r.Match = []*networking.L4MatchAttributes{{Port: pick(p, fuzzPorts)}}
		}
		return r
	})
	return vs
}

func (w *fuzzWorld) l4Routes(p *picker) []*networking.RouteDestination {
	rs := []*networking.RouteDestination{{Destination: w.destination(p)}}
	if p.bool() {
		rs[0].Weight = 60
		rs = append(rs, &networking.RouteDestination{Destination: w.destination(p), Weight: 40})
	}
	return rs
}

func (w *fuzzWorld) httpRoute(p *picker, i int) *networking.HTTPRoute {
	r := &networking.HTTPRoute{Name: pick(p, []string{"", fmt.Sprintf("r%d", i)})}
	r.Match = some(p, 3, func(int) *networking.HTTPMatchRequest {
		m := &networking.HTTPMatchRequest{Uri: stringMatch(p), IgnoreUriCase: p.bool(), Port: pick(p, []uint32{0, 80, 443})}
		if p.bool() {
			m.Headers = map[string]*networking.StringMatch{"x-user": presence(stringMatch(p))}
		}
		if p.bool() {
			m.Method = &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "GET"}}
		}
		if p.bool() {
			m.QueryParams = map[string]*networking.StringMatch{"q": presence(stringMatch(p))}
		}
		if p.bool() {
			m.WithoutHeaders = map[string]*networking.StringMatch{"x-skip": {MatchType: &networking.StringMatch_Exact{Exact: "1"}}}
		}
		return m
	})
	switch p.n(4) {
	case 0:
		r.Redirect = &networking.HTTPRedirect{Uri: pick(p, []string{"/new", "/"}), Authority: pick(p, []string{"", "x.example.com"}),
			RedirectCode: pick(p, []uint32{0, 301, 302, 308}), Scheme: pick(p, []string{"", "https"})}
		if p.bool() {
			r.Redirect.RedirectPort = &networking.HTTPRedirect_Port{Port: 8443}
		}
	case 1:
		r.DirectResponse = &networking.HTTPDirectResponse{Status: pick(p, []uint32{200, 404, 503}),
			Body: pick(p, []*networking.HTTPBody{nil, {Specifier: &networking.HTTPBody_String_{String_: "hi"}}})}
	default:
		n := 1 + p.n(3)
		for i := range n {
			d := &networking.HTTPRouteDestination{Destination: w.destination(p), Headers: headers(p)}
			if n > 1 {
				d.Weight = int32(100 / n)
				if i == 0 {
					d.Weight += int32(100 % n)
				}
			}
			r.Route = append(r.Route, d)
		}
	}
	if r.Redirect == nil && r.DirectResponse == nil {
		if p.bool() {
			r.Rewrite = &networking.HTTPRewrite{Uri: pick(p, []string{"", "/", "/v2"}), Authority: pick(p, []string{"internal", ""})}
			if r.Rewrite.Uri == "" && (p.bool() || r.Rewrite.Authority == "") {
				r.Rewrite.UriRegexRewrite = &networking.RegexRewrite{Match: "^/api(.*)", Rewrite: `/\1`}
			}
		}
		if p.bool() {
			r.Mirror = w.destination(p)
			r.MirrorPercentage = percent(p)
		}
		if p.bool() {
			r.Retries = &networking.HTTPRetry{Attempts: int32(1 + p.n(4)), PerTryTimeout: duration(p),
				RetryOn:               pick(p, []string{"", "5xx", "gateway-error,connect-failure", "retriable-status-codes,503"}),
				RetryRemoteLocalities: pick(p, []*wrapperspb.BoolValue{nil, wrapperspb.Bool(true)})}
		}
		r.Timeout = duration(p)
	}
	if r.Redirect == nil && r.DirectResponse == nil && p.bool() {
		r.Fault = &networking.HTTPFaultInjection{}
		if p.bool() {
			r.Fault.Delay = &networking.HTTPFaultInjection_Delay{HttpDelayType: &networking.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: durationpb.New(time.Second)}, Percentage: percent(p)}
		}
		if p.bool() || r.Fault.Delay == nil {
			r.Fault.Abort = &networking.HTTPFaultInjection_Abort{ErrorType: &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: pick(p, []int32{400, 503})}, Percentage: percent(p)}
		}
	}
	r.Headers = headers(p)
	if p.n(4) == 0 {
		r.CorsPolicy = &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{{MatchType: &networking.StringMatch_Exact{Exact: "https://x.example.com"}}},
			AllowMethods: []string{"GET"}, MaxAge: pick(p, []*durationpb.Duration{nil, durationpb.New(time.Hour)}), AllowCredentials: pick(p, []*wrapperspb.BoolValue{nil, wrapperspb.Bool(true)})}
	}
	return r
}

func trafficPolicy(p *picker) *networking.TrafficPolicy {
	if p.n(3) == 0 {
		return nil
	}
	tp := &networking.TrafficPolicy{}
	switch p.n(3) {
	case 0:
		tp.LoadBalancer = &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: pick(p, []networking.LoadBalancerSettings_SimpleLB{
			networking.LoadBalancerSettings_ROUND_ROBIN, networking.LoadBalancerSettings_LEAST_REQUEST, networking.LoadBalancerSettings_RANDOM, networking.LoadBalancerSettings_PASSTHROUGH})}}
	case 1:
		ch := &networking.LoadBalancerSettings_ConsistentHashLB{}
		switch p.n(3) {
		case 0:
			ch.HashKey = &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}
		case 1:
			ch.HashKey = &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}
		default:
			ch.HashKey = &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{Name: "c", Ttl: duration(p)}}
		}
		tp.LoadBalancer = &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: ch}}
	}
	if p.bool() {
		tp.ConnectionPool = &networking.ConnectionPoolSettings{
			Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: int32(p.n(3) * 50), ConnectTimeout: duration(p)},
			Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: int32(p.n(3)), Http2MaxRequests: int32(p.n(3) * 10), MaxRetries: int32(p.n(3)), IdleTimeout: duration(p)},
		}
	}
	if p.bool() {
		tp.OutlierDetection = &networking.OutlierDetection{Consecutive_5XxErrors: pick(p, []*wrapperspb.UInt32Value{nil, wrapperspb.UInt32(0), wrapperspb.UInt32(5)}),
			Interval: duration(p), BaseEjectionTime: duration(p), MaxEjectionPercent: int32(p.n(3) * 50)}
	}
	if p.bool() {
		tp.Tls = &networking.ClientTLSSettings{Mode: pick(p, []networking.ClientTLSSettings_TLSmode{networking.ClientTLSSettings_DISABLE, networking.ClientTLSSettings_SIMPLE,
			networking.ClientTLSSettings_MUTUAL, networking.ClientTLSSettings_ISTIO_MUTUAL}), Sni: pick(p, []string{"", "x.example.com"})}
		if tp.Tls.Mode == networking.ClientTLSSettings_MUTUAL || (tp.Tls.Mode == networking.ClientTLSSettings_SIMPLE && p.bool()) {
			tp.Tls.CredentialName = pick(p, fuzzCredentials[:4])
		}
	}
	if p.bool() || tp.LoadBalancer == nil && tp.ConnectionPool == nil && tp.OutlierDetection == nil && tp.Tls == nil {
		tp.PortLevelSettings = []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: pick(p, fuzzPorts)},
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_LEAST_REQUEST}}}}
	}
	return tp
}

func (w *fuzzWorld) destinationRule(p *picker) *networking.DestinationRule {
	dr := &networking.DestinationRule{Host: w.host(p), TrafficPolicy: trafficPolicy(p)}
	dr.Subsets = some(p, 3, func(i int) *networking.Subset {
		return &networking.Subset{Name: fmt.Sprintf("v%d", i+1), Labels: map[string]string{"version": fmt.Sprintf("v%d", i+1)}, TrafficPolicy: trafficPolicy(p)}
	})
	return dr
}
