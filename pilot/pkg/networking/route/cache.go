package route

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Cache keeps the routes translated from each VirtualService for one
// gateway, port and protocol across pushes, so a change to one
// VirtualService translates that object's routes again and reuses every
// other one's. An entry is reused only while everything its translation
// read is unchanged: the VirtualService's spec (by content), where it
// came from (for messages), and, for every destination host it names,
// the service's ports and the DestinationRule (by content), which give
// default ports, subsets and hash policies. The problems found while
// translating are kept with the routes and reported again on reuse, so
// output and errors are exactly those of a fresh translation.
//
// The cluster domain that completes short host names
// (model.PushContext.DomainSuffix) is not in the keys: it is set once per
// process from --domain-suffix and every push has the same one, so the
// hosts an entry resolved stay right. A Cache must not be shared by push
// contexts made with different Scoping.DomainSuffix.
//
// Entries not used by the last push that translated routes are dropped
// once that push is done (Release): the cache holds one push's worth of
// routes, which the route configurations share anyway. A Cache is safe for concurrent use; the
// zero value is not usable, use NewCache.
type Cache struct {
	mu sync.Mutex
	// push is the push the current generation serves; a lookup from
	// another push starts a new generation.
	push      *model.PushContext
	cur, prev map[cacheKey]*cacheEntry
	// specs are content hashes of VirtualService and DestinationRule
	// specs by pointer, for
	// the current and previous generation (stores hand out the same spec
	// for an unchanged object).
	specs, prevSpecs map[proto.Message]string
	// hosts are the dependency fingerprints of destination hosts in push;
	// they carry over to a push with the same services and
	// DestinationRules (model.PushContext.ServicesEpoch).
	hosts map[string]string
	// vhosts are the virtual hosts built, by name, for the current and
	// previous generation: an unchanged virtual host is the same object
	// push after push, so whoever encodes route configurations can keep
	// its bytes (see xds.interner).
	vhosts, prevVhosts map[string][]*routev3.VirtualHost
	stats              CacheStats
}

// CacheStats counts lookups since the cache was made.
type CacheStats struct {
	// Translations are the VirtualService translations done (misses);
	// Reused are those taken from the cache.
	Translations, Reused int
	// Fingerprints are the destination hosts' fingerprints computed.
	Fingerprints int
}

type cacheKey struct {
	// view is the proxy view translated for (model.PushContext.View):
	// views of one push read different DestinationRules and services.
	view    string
	vs      config.Key
	source  string
	gateway string
	port    uint32
	tls     bool
	// gatewayAPI: the VirtualService carries
	// model.GatewayAPIRoutesAnnotation, which names its routes' statistics
	// and is not part of the spec.
	gatewayAPI bool
	// sessions is its model.GatewayAPISessionsAnnotation, also outside
	// the spec.
	sessions string
}

type cacheEntry struct {
	spec string
	// deps are the destination hosts the translation read and their
	// fingerprints then, in the order read.
	deps     []hostDep
	routes   []builtRoute
	problems []*config.Error
}

type hostDep struct{ host, fingerprint string }

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{cur: map[cacheKey]*cacheEntry{}, specs: map[proto.Message]string{}, hosts: map[string]string{}}
}

// Stats returns the lookups counted so far.
func (c *Cache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Reset forgets every entry (the next push translates everything).
func (c *Cache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.push, c.cur, c.prev = nil, map[cacheKey]*cacheEntry{}, nil
	c.specs, c.prevSpecs, c.hosts = map[proto.Message]string{}, nil, map[string]string{}
	c.vhosts, c.prevVhosts = nil, nil
}

// virtualHost returns an earlier virtual host equal to vh (same routes,
// by pointer, and same fields), else keeps and returns vh. nil stays nil.
func (c *Cache) virtualHost(vh *routev3.VirtualHost) *routev3.VirtualHost {
	if c == nil || vh == nil {
		return vh
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vhosts == nil {
		c.vhosts = map[string][]*routev3.VirtualHost{}
	}
	for _, old := range c.vhosts[vh.Name] {
		if sameVirtualHost(old, vh) {
			return old
		}
	}
	for _, old := range c.prevVhosts[vh.Name] {
		if sameVirtualHost(old, vh) {
			c.vhosts[vh.Name] = append(c.vhosts[vh.Name], old)
			return old
		}
	}
	c.vhosts[vh.Name] = append(c.vhosts[vh.Name], vh)
	return vh
}

// sameVirtualHost compares the fields assembleVirtualHost sets (a test
// holds it to that), routes by pointer: cached routes are shared.
func sameVirtualHost(a, b *routev3.VirtualHost) bool {
	return a.Name == b.Name && slices.Equal(a.Domains, b.Domains) && a.RequireTls == b.RequireTls &&
		a.IncludeRequestAttemptCount == b.IncludeRequestAttemptCount && slices.Equal(a.Routes, b.Routes)
}

// routes returns vs's routes for the gateway port ctx describes, from the
// cache when nothing they depend on changed, else translated (and kept).
// Problems go to r either way, in the order translation finds them.
func (c *Cache) routes(ctx routeContext, gatewayKey string, r *reporter) []builtRoute {
	if c == nil {
		return buildVirtualServiceRoutes(ctx, gatewayKey, r)
	}
	key := cacheKey{view: ctx.push.View(), vs: ctx.vs.Key(), source: ctx.vs.Source, gateway: gatewayKey, port: ctx.port, tls: ctx.tls,
		gatewayAPI: ctx.vs.Annotations[model.GatewayAPIRoutesAnnotation] != "", sessions: ctx.vs.Annotations[model.GatewayAPISessionsAnnotation]}
	c.mu.Lock()
	c.turn(ctx.push.Base())
	spec := c.specHash(ctx.vs.Spec)
	e := c.cur[key]
	if e == nil {
		e = c.prev[key]
	}
	if e != nil && e.spec == spec && c.depsUnchanged(ctx.push, e.deps) {
		c.cur[key] = e
		c.stats.Reused++
		c.mu.Unlock()
		for _, p := range e.problems {
			r.addError(p)
		}
		return e.routes
	}
	c.stats.Translations++
	c.mu.Unlock()

	var hosts []string
	ctx.deps = &hosts
	// The routes name their VirtualService (for messages and ordering) by a
	// copy of its config: ctx.vs points into the push context's list, which
	// a kept entry would otherwise keep alive for as long as it is reused.
	own := *ctx.vs
	ctx.vs = &own
	sub := &reporter{}
	routes := buildVirtualServiceRoutes(ctx, gatewayKey, sub)
	for _, p := range sub.errs {
		r.addError(p)
	}
	e = &cacheEntry{spec: spec, routes: routes, problems: sub.errs}

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hosts {
		if !slices.ContainsFunc(e.deps, func(d hostDep) bool { return d.host == h }) {
			e.deps = append(e.deps, hostDep{host: h, fingerprint: c.fingerprint(ctx.push, h)})
		}
	}
	if c.push == ctx.push.Base() {
		c.cur[key] = e
	}
	return routes
}

// Release lets go of what only pushes before push used: the previous
// generation's entries, spec hashes and virtual hosts, which lookups of
// push have moved what they reuse out of. Call it once push has been
// translated for every connected gateway (a gateway translated later in
// the same push translates what it cannot find). Without it the routes
// of a VirtualService just removed, and its spec through the hash map's
// key, stayed until the push after next: 250 MB for one of 100,000
// routes. A push that translated nothing empties the cache.
func (c *Cache) Release(push *model.PushContext) {
	if c == nil || push == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turn(push)
	// Dropped, not cleared for reuse: a map keeps the buckets of the most
	// it ever held, and one generation of a large config would then be
	// kept for good.
	c.prev, c.prevSpecs, c.prevVhosts = nil, nil, nil
}

// turn starts a new generation when push is not the current one. The
// caller holds mu.
func (c *Cache) turn(push *model.PushContext) {
	if c.push == push {
		return
	}
	// A push that kept the last one's services and DestinationRules (a
	// change to Gateways or VirtualServices alone) keeps their
	// fingerprints: computing them again was a third of such a push's
	// route work at 5,000 hosts. Hosts named by VirtualServices but not
	// services are kept too, up to a bound, so edits naming ever new
	// hosts cannot grow the map.
	keepHosts := c.push != nil && c.push.ServicesEpoch() == push.ServicesEpoch() &&
		len(c.hosts) <= 2*len(push.Services())+1024
	c.push = push
	// The maps of the generation before last hold nothing needed any more:
	// cleared, they are the new generation's, so a push does not allocate
	// (and drop) maps of every VirtualService and host (1.7 MB a push at
	// 5,000 VirtualServices). Where each push is released (Release, as the
	// server does) they are gone already and made anew: a map kept for
	// reuse would keep the buckets of the largest config it ever held.
	c.prev, c.cur = c.cur, reuse(c.prev, len(c.cur))
	c.prevSpecs, c.specs = c.specs, reuse(c.prevSpecs, len(c.specs))
	c.prevVhosts, c.vhosts = c.vhosts, reuse(c.prevVhosts, len(c.vhosts))
	if c.hosts == nil {
		c.hosts = map[string]string{}
	}
	if !keepHosts {
		clear(c.hosts)
	}
}

// reuse returns m emptied, or a new map sized n when m is nil.
func reuse[K comparable, V any](m map[K]V, n int) map[K]V {
	if m == nil {
		return make(map[K]V, n)
	}
	clear(m)
	return m
}

// specHash returns the content hash of a spec. The caller
// holds mu.
func (c *Cache) specHash(spec proto.Message) string {
	if h, ok := c.specs[spec]; ok {
		return h
	}
	h, ok := c.prevSpecs[spec]
	if !ok {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(spec)
		if err != nil {
			// Not cacheable: a hash no entry can have.
			h = fmt.Sprintf("unencodable %p", spec)
		} else {
			sum := sha256.Sum256(b)
			h = hex.EncodeToString(sum[:16])
		}
	}
	c.specs[spec] = h
	return h
}

func (c *Cache) depsUnchanged(push *model.PushContext, deps []hostDep) bool {
	for _, d := range deps {
		if c.fingerprint(push, d.host) != d.fingerprint {
			return false
		}
	}
	return true
}

// fingerprint sums what route translation reads about a destination host:
// the service's ports and the DestinationRule for it. The caller holds mu.
func (c *Cache) fingerprint(push *model.PushContext, host string) string {
	if push.Base() != c.push {
		return c.fingerprintOf(push, host)
	}
	key := host
	if v := push.View(); v != "" {
		// A view's fingerprints are its own (another DestinationRule,
		// a service not exported to it).
		key = v + "\x00" + host
	}
	if f, ok := c.hosts[key]; ok {
		return f
	}
	f := c.fingerprintOf(push, host)
	c.hosts[key] = f
	return f
}

func (c *Cache) fingerprintOf(push *model.PushContext, host string) string {
	c.stats.Fingerprints++
	var buf [256]byte // on the stack: only the string is allocated
	b := buf[:0]
	if svc := push.ServiceForHost(host); svc != nil {
		for _, p := range svc.Ports {
			b = strconv.AppendUint(b, uint64(p.Number), 10)
			b = append(b, '/')
			b = append(b, p.Name...)
			b = append(b, '/')
			b = append(b, p.Protocol...)
			b = append(b, ';')
		}
	} else {
		b = append(b, "no service;"...)
	}
	if dr := push.DestinationRuleForHost(host); dr != nil {
		b = append(b, dr.Namespace...)
		b = append(b, '/')
		b = append(b, dr.Name...)
		b = append(b, '/')
		b = append(b, c.specHash(dr.Spec)...)
	}
	return string(b)
}
