package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseAll parses a file of VirtualServices shaped like the
// bench workload's; it is what a file-mode start costs per object (one
// strict YAML pass per document, not one plain pass and one strict).
func BenchmarkParseAll(b *testing.B) {
	var sb strings.Builder
	for i := range 20 {
		fmt.Fprintf(&sb, `---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: app-%d
  namespace: bench
spec:
  hosts: ["app-%d.example.com"]
  gateways: ["bench/gw"]
  http:
  - match:
    - uri:
        prefix: /api/v1
    timeout: 250ms
    route:
    - destination:
        host: app-%d.bench.svc.cluster.local
        port:
          number: 8080
`, i, i, i)
	}
	data := []byte(sb.String())
	b.ReportAllocs()
	for b.Loop() {
		objs, errs := ParseAll("bench.yaml", data, Options{})
		if len(errs) > 0 || len(objs.Configs) != 20 {
			b.Fatalf("parsed %d objects, errors %v", len(objs.Configs), errs)
		}
	}
}
