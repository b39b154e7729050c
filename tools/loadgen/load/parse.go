package load

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// parsed is what the load tool needs from one distinct set of resources of
// one type. Gateways receiving the same bytes share it.
type parsed struct {
	// err is why Envoy would reject the resources (they do not decode or
	// fail validation); the response is NACKed with it.
	err error
	// names are the resources' names in response order.
	names []string
	// versions are a delta response's resource versions, by index.
	versions []string
	// refs are, for state of the world, the sorted distinct names the
	// resources reference: EDS service names of CDS clusters, route
	// configuration names of LDS listeners.
	refs []string
	// refsWire is refs as a request's resource_names field (encodeNames),
	// for state of the world, whose every ACK repeats it.
	refsWire []byte
	// refsOf are the same per resource (delta applies them one by one).
	refsOf [][]string
	// prefixes are every path prefix an RDS response's routes match.
	prefixes map[string]bool
	// markers are the ids of an EDS response's marker endpoints (see
	// Options.EndpointMarker), in response order.
	markers []int
	// routeMarkers are the distinct ids of an RDS response's marker paths
	// (see Options.RouteMarker), in response order.
	routeMarkers []int
}

// key identifies a distinct response content.
type key struct {
	typeURL string
	delta   bool
	sum     uint64
	size    int
}

// entry is one content's parse; done is closed once p is set.
type entry struct {
	done chan struct{}
	p    *parsed
}

// wait returns the parse once it is done.
func (e *entry) wait() *parsed {
	<-e.done
	return e.p
}

// parseCache parses each distinct response content once, whichever
// gateway sees it first; the others wait for that parse and share it.
//
// Under endpoint churn every push is a new content, so the cache keeps two
// generations of at most maxEntries each: a content older than both is
// parsed again if it ever comes back, which costs time, not correctness.
type parseCache struct {
	validate bool
	// marker picks out marker endpoints (Options.EndpointMarker); set
	// before the first get.
	marker func(addr string) (int, bool)
	// routeMarker picks out marker route paths (Options.RouteMarker); set
	// before the first get.
	routeMarker func(path string) (int, bool)
	mu          sync.Mutex
	// entries is the current generation, old the one before.
	entries, old map[key]*entry
	parses       atomic.Int64
}

// maxEntries bounds one generation of the parse cache.
const maxEntries = 256

func newParseCache(validate bool) *parseCache {
	return &parseCache{validate: validate, entries: map[key]*entry{}}
}

// get returns the parse of resources (serialized Any for state of the
// world, Resource for delta) with content sum. resources are only read
// during the call.
func (c *parseCache) get(typeURL string, delta bool, sum uint64, resources [][]byte) *parsed {
	return c.start(typeURL, delta, sum, resources).wait()
}

// start returns the entry of a content. The first caller for a content
// parses it here, while resources can still be read; every other caller
// gets the entry at once and waits for it with wait after letting go of
// the bytes it received. (Waiting here held each gateway's joined copy of
// the response: at 5,000 x 500, 499 gateways waited for the first one's
// parse of the same 2-4 MB, each with a fresh buffer, and the load tool's
// CPU went from 5 to 19 s in page faults and copying.)
func (c *parseCache) start(typeURL string, delta bool, sum uint64, resources [][]byte) *entry {
	size := 0
	for _, r := range resources {
		size += len(r)
	}
	k := key{typeURL: typeURL, delta: delta, sum: sum, size: size}
	c.mu.Lock()
	e, ok := c.entries[k]
	created := false
	if !ok {
		if e, ok = c.old[k]; !ok {
			e, created = &entry{done: make(chan struct{})}, true
		}
		if len(c.entries) >= maxEntries {
			c.old, c.entries = c.entries, map[key]*entry{}
		}
		c.entries[k] = e
	}
	c.mu.Unlock()
	if created {
		c.parses.Add(1)
		e.p = parseMarked(typeURL, delta, resources, c.validate, markerFuncs{endpoint: c.marker, route: c.routeMarker})
		close(e.done)
	}
	return e
}

// parse decodes resources of typeURL and extracts names and references.
func parse(typeURL string, delta bool, resources [][]byte, validate bool) *parsed {
	return parseMarked(typeURL, delta, resources, validate, markerFuncs{})
}

// markerFuncs pick benchmark markers out of responses: endpoint addresses
// (EDS) and route paths (RDS); either may be nil.
type markerFuncs struct {
	endpoint func(addr string) (int, bool)
	route    func(path string) (int, bool)
}

// parseMarked is parse that also collects the ids of marker endpoints and
// marker route paths.
func parseMarked(typeURL string, delta bool, resources [][]byte, validate bool, marker markerFuncs) *parsed {
	p := &parsed{}
	var refs []string
	for i, b := range resources {
		a := &anypb.Any{}
		if delta {
			var r discoveryv3.Resource
			if err := proto.Unmarshal(b, &r); err != nil {
				p.err = fmt.Errorf("resource %d: %w", i, err)
				return p
			}
			p.versions = append(p.versions, r.GetVersion())
			a = r.GetResource()
		} else if err := proto.Unmarshal(b, a); err != nil {
			p.err = fmt.Errorf("resource %d: %w", i, err)
			return p
		}
		name, rs, err := parseOne(typeURL, a, validate, p, marker)
		if err != nil {
			p.err = fmt.Errorf("resource %d %q: %w", i, name, err)
			return p
		}
		p.names = append(p.names, name)
		p.refsOf = append(p.refsOf, rs)
		refs = append(refs, rs...)
	}
	slices.Sort(refs)
	p.refs = slices.Compact(refs)
	if !delta {
		p.refsWire = encodeNames(p.refs)
	}
	return p
}

// parseOne decodes one serialized Any and returns its name and the names
// it references; RDS prefixes and EDS markers are added to p.
func parseOne(typeURL string, a *anypb.Any, validate bool, p *parsed, marker markerFuncs) (string, []string, error) {
	if a.GetTypeUrl() != typeURL {
		return "", nil, fmt.Errorf("type %s in a %s response", a.GetTypeUrl(), typeURL)
	}
	var m interface {
		proto.Message
		ValidateAll() error
	}
	switch typeURL {
	case resource.ClusterType:
		m = &clusterv3.Cluster{}
	case resource.EndpointType:
		m = &endpointv3.ClusterLoadAssignment{}
	case resource.ListenerType:
		m = &listenerv3.Listener{}
	case resource.RouteType:
		m = &routev3.RouteConfiguration{}
	default:
		return "", nil, fmt.Errorf("unexpected type %s", typeURL)
	}
	if err := a.UnmarshalTo(m); err != nil {
		return "", nil, err
	}
	var name string
	var refs []string
	switch r := m.(type) {
	case *clusterv3.Cluster:
		name = r.GetName()
		if r.GetType() == clusterv3.Cluster_EDS {
			n := r.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = r.GetName()
			}
			refs = []string{n}
		}
	case *endpointv3.ClusterLoadAssignment:
		name = r.GetClusterName()
		if marker.endpoint != nil {
			for _, le := range r.GetEndpoints() {
				for _, lb := range le.GetLbEndpoints() {
					if id, ok := marker.endpoint(lb.GetEndpoint().GetAddress().GetSocketAddress().GetAddress()); ok {
						p.markers = append(p.markers, id)
					}
				}
			}
		}
	case *listenerv3.Listener:
		name = r.GetName()
		var err error
		if refs, err = routeNames(r); err != nil {
			return name, nil, err
		}
	case *routev3.RouteConfiguration:
		name = r.GetName()
		if p.prefixes == nil {
			p.prefixes = map[string]bool{}
		}
		for _, vh := range r.GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if pre, ok := rt.GetMatch().GetPathSpecifier().(*routev3.RouteMatch_Prefix); ok {
					p.prefixes[pre.Prefix] = true
				}
				if marker.route != nil {
					p.addRouteMarker(rt.GetMatch(), marker.route)
				}
			}
		}
	}
	if validate {
		if err := m.ValidateAll(); err != nil {
			return name, nil, err
		}
	}
	return name, refs, nil
}

// routeNames are the RDS route configurations a listener's HTTP connection
// managers name.
func routeNames(l *listenerv3.Listener) ([]string, error) {
	var out []string
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if tc == nil || tc.GetTypeUrl() != "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager" {
				continue
			}
			var hcm hcmv3.HttpConnectionManager
			if err := tc.UnmarshalTo(&hcm); err != nil {
				return nil, fmt.Errorf("http_connection_manager: %w", err)
			}
			if n := hcm.GetRds().GetRouteConfigName(); n != "" {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 && len(l.GetFilterChains()) == 0 {
		return nil, errors.New("listener without filter chains")
	}
	return out, nil
}

// addRouteMarker adds the id of a route's marker path (prefix, exact path
// or separated prefix), once per id: a Gateway API PathPrefix becomes two
// Envoy routes, an exact one and a prefix one.
func (p *parsed) addRouteMarker(m *routev3.RouteMatch, marker func(string) (int, bool)) {
	var path string
	switch ps := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		path = ps.Prefix
	case *routev3.RouteMatch_Path:
		path = ps.Path
	case *routev3.RouteMatch_PathSeparatedPrefix:
		path = ps.PathSeparatedPrefix
	default:
		return
	}
	if id, ok := marker(path); ok && !slices.Contains(p.routeMarkers, id) {
		p.routeMarkers = append(p.routeMarkers, id)
	}
}
