package validation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
)

func (v *validator) connectionPool(f string, cp *networking.ConnectionPoolSettings) {
	if cp == nil {
		return
	}
	if cp.Tcp == nil && cp.Http == nil {
		v.add(f, "connection pool must set tcp, http, or both")
		return
	}
	nonNegative := func(field string, n int32) {
		if n < 0 {
			v.add(field, "%d must not be negative", n)
		}
	}
	if t := cp.Tcp; t != nil {
		tf := f + ".tcp"
		nonNegative(tf+".maxConnections", t.MaxConnections)
		v.checkDuration(tf+".connectTimeout", t.ConnectTimeout, time.Millisecond)
		v.checkDuration(tf+".maxConnectionDuration", t.MaxConnectionDuration, time.Millisecond)
		v.checkDuration(tf+".idleTimeout", t.IdleTimeout, time.Millisecond)
		if ka := t.TcpKeepalive; ka != nil {
			// Envoy takes keepalive times in whole seconds.
			v.checkSeconds(tf+".tcpKeepalive.time", ka.Time)
			v.checkSeconds(tf+".tcpKeepalive.interval", ka.Interval)
		}
	}
	if h := cp.Http; h != nil {
		hf := f + ".http"
		nonNegative(hf+".http1MaxPendingRequests", h.Http1MaxPendingRequests)
		nonNegative(hf+".http2MaxRequests", h.Http2MaxRequests)
		nonNegative(hf+".maxRequestsPerConnection", h.MaxRequestsPerConnection)
		nonNegative(hf+".maxRetries", h.MaxRetries)
		nonNegative(hf+".maxConcurrentStreams", h.MaxConcurrentStreams)
		v.checkDuration(hf+".idleTimeout", h.IdleTimeout, time.Millisecond)
		if v.checkEnum(hf+".h2UpgradePolicy", networking.ConnectionPoolSettings_HTTPSettings_H2UpgradePolicy_name, int32(h.H2UpgradePolicy)) &&
			h.H2UpgradePolicy == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE && h.UseClientProtocol {
			v.add(hf+".useClientProtocol", "useClientProtocol cannot be true when h2UpgradePolicy is UPGRADE")
		}
		if ka := h.Http2KeepAlive; ka != nil {
			v.checkDuration(hf+".http2KeepAlive.interval", ka.Interval, time.Millisecond)
			v.checkDuration(hf+".http2KeepAlive.timeout", ka.Timeout, time.Millisecond)
		}
	}
}

// checkSeconds checks a duration Envoy only takes in whole seconds.
func (v *validator) checkSeconds(field string, d *durationpb.Duration) {
	if d == nil {
		return
	}
	if err := d.CheckValid(); err != nil {
		v.add(field, "invalid duration: %v", err)
		return
	}
	if dur := d.AsDuration(); dur < time.Second || dur%time.Second != 0 {
		v.add(field, "duration %v must be a positive whole number of seconds", dur)
	}
}

func (v *validator) outlierDetection(f string, od *networking.OutlierDetection) {
	if od == nil {
		return
	}
	if od.ConsecutiveErrors < 0 {
		v.add(f+".consecutiveErrors", "%d must not be negative", od.ConsecutiveErrors)
	}
	if !od.SplitExternalLocalOriginErrors && od.ConsecutiveLocalOriginFailures.GetValue() > 0 {
		v.add(f+".consecutiveLocalOriginFailures", "consecutiveLocalOriginFailures needs splitExternalLocalOriginErrors: true")
	}
	v.checkDuration(f+".interval", od.Interval, time.Millisecond)
	v.checkDuration(f+".baseEjectionTime", od.BaseEjectionTime, time.Millisecond)
	if p := od.MaxEjectionPercent; p < 0 || p > 100 {
		v.add(f+".maxEjectionPercent", "percent %d must be in the range 0-100", p)
	}
	if p := od.MinHealthPercent; p < 0 || p > 100 {
		v.add(f+".minHealthPercent", "percent %d must be in the range 0-100", p)
	}
	for i, c := range od.OutlierDetectionHttpErrorCodes {
		if c < 100 || c > 599 {
			v.add(at(f+".outlierDetectionHttpErrorCodes", i), "status %d must be in the range 100-599", c)
		}
	}
}

// clientTLS checks the TLS a proxy originates to the destination.
func (v *validator) clientTLS(f string, t *networking.ClientTLSSettings) {
	if t == nil {
		return
	}
	if !v.checkEnum(f+".mode", networking.ClientTLSSettings_TLSmode_name, int32(t.Mode)) {
		return
	}
	simpleOrMutual := t.Mode == networking.ClientTLSSettings_SIMPLE || t.Mode == networking.ClientTLSSettings_MUTUAL
	if t.GetInsecureSkipVerify().GetValue() && simpleOrMutual {
		// Nothing would be verified, so verification material is a mistake.
		if t.CaCertificates != "" {
			v.add(f+".caCertificates", "caCertificates cannot be set with insecureSkipVerify")
		}
		if len(t.SubjectAltNames) > 0 {
			v.add(f+".subjectAltNames", "subjectAltNames cannot be set with insecureSkipVerify")
		}
		if t.Mode == networking.ClientTLSSettings_SIMPLE && t.CredentialName != "" {
			v.add(f+".credentialName", "credentialName cannot be set with insecureSkipVerify in SIMPLE mode")
		}
	}
	if simpleOrMutual && t.CredentialName != "" {
		// The credential holds the certificates; files alongside it are ignored.
		for _, fld := range []struct{ name, val string }{
			{"clientCertificate", t.ClientCertificate}, {"privateKey", t.PrivateKey},
			{"caCertificates", t.CaCertificates}, {"caCrl", t.CaCrl},
		} {
			if fld.val != "" {
				v.add(f+"."+fld.name, "%s cannot be set together with credentialName", fld.name)
			}
		}
		return
	}
	if t.Mode == networking.ClientTLSSettings_MUTUAL {
		switch {
		case t.ClientCertificate == "" && t.PrivateKey == "":
			v.add(f, "MUTUAL mode needs a credentialName, or clientCertificate and privateKey")
		case t.ClientCertificate == "":
			v.add(f+".clientCertificate", "MUTUAL mode needs clientCertificate with privateKey")
		case t.PrivateKey == "":
			v.add(f+".privateKey", "MUTUAL mode needs privateKey with clientCertificate")
		}
	}
}

// localityLB checks locality load balancing: distribute and failover are
// alternatives; each distribute rule's weights go to distinct localities
// and add up to 100; failover moves between different regions.
func (v *validator) localityLB(f string, l *networking.LocalityLoadBalancerSetting) {
	if l == nil {
		return
	}
	if len(l.Distribute) > 0 && len(l.Failover) > 0 {
		v.add(f, "distribute and failover are mutually exclusive")
	}
	for i, d := range l.Distribute {
		df := at(f+".distribute", i)
		if d == nil {
			v.add(df, "distribute rule must not be null")
			continue
		}
		if err := validateLocality(d.From); err != nil {
			v.add(df+".from", "%v", err)
		}
		if len(d.To) == 0 {
			v.add(df+".to", "at least one destination locality is required")
			continue
		}
		var sum uint64
		for _, loc := range sortedKeys(d.To) {
			w := d.To[loc]
			if err := validateLocality(loc); err != nil {
				v.add(key(df+".to", loc), "%v", err)
			}
			if w < 1 || w > 100 {
				v.add(key(df+".to", loc), "weight %d must be in the range 1-100", w)
			}
			sum += uint64(w)
		}
		if sum != 100 {
			v.add(df+".to", "weights add up to %d; they must add up to 100", sum)
		}
	}
	for i, fo := range l.Failover {
		ff := at(f+".failover", i)
		if fo == nil {
			v.add(ff, "failover rule must not be null")
			continue
		}
		for _, side := range []struct{ name, region string }{{"from", fo.From}, {"to", fo.To}} {
			switch {
			case side.region == "":
				v.add(ff+"."+side.name, "region is required")
			case strings.ContainsAny(side.region, "/*"):
				v.add(ff+"."+side.name, "failover %q must name a single region, without '/' or '*'", side.region)
			}
		}
		if fo.From != "" && fo.From == fo.To {
			v.add(ff+".to", "failover must go to a different region than %q", fo.From)
		}
	}
	for i, p := range l.FailoverPriority {
		if p == "" {
			v.add(at(f+".failoverPriority", i), "label must not be empty")
		}
	}
}

// validateLocality checks "region", "region/zone" or
// "region/zone/subzone", with an optional trailing "*" wildcard.
func validateLocality(loc string) error {
	if loc == "" {
		return fmt.Errorf("locality must not be empty")
	}
	if n := strings.Count(loc, "*"); n > 1 || n == 1 && !strings.HasSuffix(loc, "*") {
		return fmt.Errorf("locality %q may only have one '*', at the end", loc)
	}
	parts := strings.Split(loc, "/")
	if len(parts) > 3 || slices.Contains(parts, "") {
		return fmt.Errorf("locality %q must be region, region/zone or region/zone/subzone", loc)
	}
	return nil
}
