package cluster

import (
	"testing"
	"time"
)

func TestHashPolicy(t *testing.T) {
	push := pushFrom(t, join(
		se("hosts", "header.example.com, cookie.example.com, ip.example.com, query.example.com, plain.example.com", "STATIC", "{address: 10.0.0.1, labels: {v: a}}"),
		dr("header", "header.example.com", `  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
  subsets:
  - name: a
    labels: {v: a}
    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
  - name: b
    labels: {v: b}
    trafficPolicy: {loadBalancer: {consistentHash: {httpQueryParameterName: q}}}
`),
		dr("cookie", "cookie.example.com", `  trafficPolicy:
    loadBalancer:
      consistentHash:
        httpCookie: {name: session, path: /app, ttl: 60s, attributes: [{name: SameSite, value: Strict}]}
    portLevelSettings:
    - port: {number: 9090}
      loadBalancer: {simple: RANDOM}
`),
		dr("ip", "ip.example.com", "  trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true}}}"),
		dr("query", "query.example.com", "  trafficPolicy: {loadBalancer: {consistentHash: {httpQueryParameterName: user}}}"),
	))

	if hp := HashPolicy(push, "header.example.com", "", 80); len(hp) != 1 || hp[0].GetHeader().GetHeaderName() != "x-user" {
		t.Errorf("header: %v", hp)
	}
	if hp := HashPolicy(push, "header.example.com", "a", 80); hp != nil {
		t.Errorf("subset a balances round robin, want no hash policy, got %v", hp)
	}
	if hp := HashPolicy(push, "header.example.com", "b", 80); len(hp) != 1 || hp[0].GetQueryParameter().GetName() != "q" {
		t.Errorf("subset b: %v", hp)
	}
	hp := HashPolicy(push, "cookie.example.com", "", 80)
	if len(hp) != 1 {
		t.Fatalf("cookie: %v", hp)
	}
	ck := hp[0].GetCookie()
	if ck.GetName() != "session" || ck.GetPath() != "/app" || ck.GetTtl().AsDuration() != time.Minute ||
		len(ck.GetAttributes()) != 1 || ck.GetAttributes()[0].GetName() != "SameSite" || ck.GetAttributes()[0].GetValue() != "Strict" {
		t.Errorf("cookie: %v", ck)
	}
	if hp := HashPolicy(push, "cookie.example.com", "", 9090); hp != nil {
		t.Errorf("port-level RANDOM on 9090 must drop the hash, got %v", hp)
	}
	if hp := HashPolicy(push, "ip.example.com", "", 80); len(hp) != 1 || !hp[0].GetConnectionProperties().GetSourceIp() {
		t.Errorf("source ip: %v", hp)
	}
	if hp := HashPolicy(push, "query.example.com", "", 80); len(hp) != 1 || hp[0].GetQueryParameter().GetName() != "user" {
		t.Errorf("query: %v", hp)
	}
	if hp := HashPolicy(push, "plain.example.com", "", 80); hp != nil {
		t.Errorf("no rule: %v", hp)
	}
	if hp := HashPolicy(push, "unknown.example.com", "", 0); hp != nil {
		t.Errorf("unknown host: %v", hp)
	}
	for _, h := range hp {
		if err := h.ValidateAll(); err != nil {
			t.Errorf("hash policy invalid: %v", err)
		}
	}
}

func TestHashPolicyPortZeroUsesOnlyPort(t *testing.T) {
	push := pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: one, namespace: default}
spec:
  hosts: [one.example.com]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.1}]
---
`+dr("one", "one.example.com", `  trafficPolicy:
    portLevelSettings:
    - port: {number: 8080}
      loadBalancer: {consistentHash: {httpHeaderName: x-port}}
`))
	if hp := HashPolicy(push, "one.example.com", "", 0); len(hp) != 1 || hp[0].GetHeader().GetHeaderName() != "x-port" {
		t.Errorf("port 0 with a single service port must resolve to it: %v", hp)
	}
}
