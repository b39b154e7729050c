package validation

import (
	"time"

	networking "istio.io/api/networking/v1alpha3"
)

// Envoy's bounds on consistent hashing tables.
const (
	maxRingSize      = 8 * 1024 * 1024 // RingHash minimum_ring_size
	maglevTableLimit = 5000011         // Maglev table_size must be a prime below this
)

func (v *validator) destinationRule(dr *networking.DestinationRule) {
	switch {
	case dr.Host == "":
		v.add("spec.host", "host is required")
	default:
		if err := validateWildcardDomain(dr.Host); err != nil {
			v.addErr("spec.host", err)
		}
	}
	v.trafficPolicy("spec.trafficPolicy", dr.TrafficPolicy)
	subsets := map[string]int{}
	for i, s := range dr.Subsets {
		f := at("spec.subsets", i)
		if s == nil {
			v.add(f, "subset must not be null")
			continue
		}
		switch {
		case s.Name == "":
			v.add(f+".name", "subset name is required")
		case !isDNS1123Label(s.Name):
			v.add(f+".name", "subset name %q is not a DNS-1123 label", s.Name)
		default:
			if j, dup := subsets[s.Name]; dup {
				v.add(f+".name", "duplicate subset name %q: already used by spec.subsets[%d]", s.Name, j)
			} else {
				subsets[s.Name] = i
			}
		}
		// A subset without labels selects every endpoint of the host, as in
		// Istio; it is useful for a subset-level traffic policy.
		v.labels(f+".labels", s.Labels)
		v.trafficPolicy(f+".trafficPolicy", s.TrafficPolicy)
	}
	v.exportTo("spec.exportTo", dr.ExportTo, false)
	if ws := dr.WorkloadSelector; ws != nil {
		v.selectorLabels("spec.workloadSelector.matchLabels", ws.MatchLabels)
	}
}

func (v *validator) trafficPolicy(f string, p *networking.TrafficPolicy) {
	if p == nil {
		return
	}
	if p.LoadBalancer == nil && p.ConnectionPool == nil && p.OutlierDetection == nil && p.Tls == nil &&
		len(p.PortLevelSettings) == 0 && p.Tunnel == nil && p.ProxyProtocol == nil && p.RetryBudget == nil {
		v.add(f, "traffic policy must set at least one field")
		return
	}
	if p.Tunnel != nil && p.ProxyProtocol != nil {
		v.add(f, "tunnel and proxyProtocol are mutually exclusive")
	}
	v.loadBalancer(f+".loadBalancer", p.LoadBalancer)
	v.connectionPool(f+".connectionPool", p.ConnectionPool)
	v.outlierDetection(f+".outlierDetection", p.OutlierDetection)
	v.clientTLS(f+".tls", p.Tls)
	ports := map[uint32]int{}
	for i, pl := range p.PortLevelSettings {
		pf := at(f+".portLevelSettings", i)
		if pl == nil {
			v.add(pf, "port traffic policy must not be null")
			continue
		}
		if pl.Port == nil {
			v.add(pf+".port", "port is required")
		} else {
			v.checkPort(pf+".port.number", pl.Port.Number)
			if j, dup := ports[pl.Port.Number]; dup {
				v.add(pf+".port.number", "duplicate port %d: already set by %s", pl.Port.Number, at(f+".portLevelSettings", j))
			} else {
				ports[pl.Port.Number] = i
			}
		}
		if pl.LoadBalancer == nil && pl.ConnectionPool == nil && pl.OutlierDetection == nil && pl.Tls == nil {
			v.add(pf, "port traffic policy must set at least one of loadBalancer, connectionPool, outlierDetection or tls")
		}
		v.loadBalancer(pf+".loadBalancer", pl.LoadBalancer)
		v.connectionPool(pf+".connectionPool", pl.ConnectionPool)
		v.outlierDetection(pf+".outlierDetection", pl.OutlierDetection)
		v.clientTLS(pf+".tls", pl.Tls)
	}
	if t := p.Tunnel; t != nil {
		tf := f + ".tunnel"
		if t.Protocol != "" && t.Protocol != "CONNECT" && t.Protocol != "POST" {
			v.add(tf+".protocol", `tunnel protocol %q must be "CONNECT" or "POST"`, t.Protocol)
		}
		if !isIP(t.TargetHost) {
			if err := validateFQDN(t.TargetHost); err != nil {
				v.add(tf+".targetHost", "target host must be an FQDN or an IP address: %v", err)
			}
		}
		v.checkPort(tf+".targetPort", t.TargetPort)
	}
	if pp := p.ProxyProtocol; pp != nil {
		v.checkEnum(f+".proxyProtocol.version", networking.TrafficPolicy_ProxyProtocol_VERSION_name, int32(pp.Version))
	}
	if rb := p.RetryBudget; rb != nil {
		if rb.Percent != nil {
			v.checkPercent(f+".retryBudget.percent", rb.Percent.Value)
		}
		v.checkDuration(f+".retryBudget.budgetInterval", rb.BudgetInterval, time.Millisecond)
	}
}

func (v *validator) loadBalancer(f string, lb *networking.LoadBalancerSettings) {
	if lb == nil {
		return
	}
	switch p := lb.LbPolicy.(type) {
	case *networking.LoadBalancerSettings_Simple:
		v.checkEnum(f+".simple", networking.LoadBalancerSettings_SimpleLB_name, int32(p.Simple))
	case *networking.LoadBalancerSettings_ConsistentHash:
		v.consistentHash(f+".consistentHash", p.ConsistentHash)
	}
	v.localityLB(f+".localityLbSetting", lb.LocalityLbSetting)
	if lb.WarmupDurationSecs != nil && lb.Warmup != nil {
		v.add(f+".warmup", "warmupDurationSecs and warmup are mutually exclusive")
	}
	v.checkDuration(f+".warmupDurationSecs", lb.WarmupDurationSecs, time.Millisecond)
	if w := lb.Warmup; w != nil {
		if w.Duration == nil {
			v.add(f+".warmup.duration", "duration is required")
		}
		v.checkDuration(f+".warmup.duration", w.Duration, time.Millisecond)
		if w.MinimumPercent != nil {
			v.checkPercent(f+".warmup.minimumPercent", w.MinimumPercent.Value)
		}
		if a := w.Aggression; a != nil && !(a.Value >= 1) {
			v.add(f+".warmup.aggression", "aggression %v must be at least 1", a.Value)
		}
	}
}

func (v *validator) consistentHash(f string, ch *networking.LoadBalancerSettings_ConsistentHashLB) {
	if ch == nil {
		v.add(f, "consistentHash must not be null")
		return
	}
	// Exactly one hash key: the oneof allows at most one, and an unset or
	// empty one leaves Envoy nothing to hash on.
	switch k := ch.HashKey.(type) {
	case nil:
		v.add(f, "a hash key is required: one of httpHeaderName, httpCookie, useSourceIp or httpQueryParameterName")
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName:
		if !isToken(k.HttpHeaderName) {
			v.add(f+".httpHeaderName", "%q is not a valid header name", k.HttpHeaderName)
		}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName:
		if k.HttpQueryParameterName == "" {
			v.add(f+".httpQueryParameterName", "query parameter name must not be empty")
		}
	case *networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp:
		if !k.UseSourceIp {
			v.add(f+".useSourceIp", "useSourceIp is false, which leaves nothing to hash on; set it to true or use another key")
		}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie:
		c := k.HttpCookie
		switch {
		case c == nil:
			v.add(f+".httpCookie", "httpCookie must not be null")
		case c.Name == "":
			v.add(f+".httpCookie.name", "cookie name is required")
		}
		if c != nil {
			v.checkDuration(f+".httpCookie.ttl", c.Ttl, 0)
		}
	}
	if ch.MinimumRingSize != 0 && ch.HashAlgorithm != nil {
		v.add(f+".minimumRingSize", "minimumRingSize cannot be combined with ringHash or maglev; use ringHash.minimumRingSize")
	}
	if ch.MinimumRingSize > maxRingSize {
		v.add(f+".minimumRingSize", "minimumRingSize %d must be at most %d", ch.MinimumRingSize, maxRingSize)
	}
	switch a := ch.HashAlgorithm.(type) {
	case *networking.LoadBalancerSettings_ConsistentHashLB_RingHash_:
		if n := a.RingHash.GetMinimumRingSize(); n > maxRingSize {
			v.add(f+".ringHash.minimumRingSize", "minimumRingSize %d must be at most %d", n, maxRingSize)
		}
	case *networking.LoadBalancerSettings_ConsistentHashLB_Maglev:
		switch n := a.Maglev.GetTableSize(); {
		case n == 0:
			v.add(f+".maglev.tableSize", "tableSize is required for maglev")
		case n >= maglevTableLimit:
			v.add(f+".maglev.tableSize", "tableSize %d must be less than %d", n, maglevTableLimit)
		case !isPrime(n):
			v.add(f+".maglev.tableSize", "tableSize %d must be a prime number", n)
		}
	}
}

func isPrime(n uint64) bool {
	if n < 2 {
		return false
	}
	for d := uint64(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
