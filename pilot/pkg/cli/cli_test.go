package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
)

// The table folds the protocol states into what an operator asks: SENT
// and a newer version waiting are both STALE; NACKED shows the rejected
// version, SYNCED the acked one.
func TestStatusCells(t *testing.T) {
	cases := []struct {
		in   debugapi.SyncType
		want string
	}{
		{debugapi.SyncType{Status: "SYNCED", SentVersion: "aaaaaaaaaaaaaaaa", AckedVersion: "aaaaaaaaaaaaaaaa"}, "SYNCED (aaaaaaaaaaaa)"},
		{debugapi.SyncType{Status: "SYNCED", SentVersion: "v1", AckedVersion: "v1", Stale: true}, "STALE (v1)"},
		{debugapi.SyncType{Status: "SENT", SentVersion: "v2", AckedVersion: "v1"}, "STALE (v2)"},
		{debugapi.SyncType{Status: "NACKED", SentVersion: "v3", AckedVersion: "v1", LastNack: &debugapi.SyncNack{Version: "v3", Message: "no"}}, "NACKED (v3)"},
		{debugapi.SyncType{Status: "NOT_SENT"}, "NOT SENT"},
	}
	for _, c := range cases {
		if got := cell(TypeStatus{SyncType: c.in, Summary: summary(c.in)}); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
}

// A column appears for SDS only when some proxy has secrets; a proxy
// without a type shows "-".
func TestStatusTable(t *testing.T) {
	st := []ProxyStatus{
		{ID: "a", Replica: "r0", Types: []TypeStatus{{SyncType: debugapi.SyncType{Type: "cds", Status: "SYNCED", AckedVersion: "1"}, Summary: "SYNCED"}}},
		{ID: "b", Replica: "r1", Types: []TypeStatus{{SyncType: debugapi.SyncType{Type: "sds", Status: "SENT", SentVersion: "2"}, Summary: "STALE"}}},
	}
	var b bytes.Buffer
	if err := WriteStatus(&b, st, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME CDS SDS REPLICA" ||
		strings.Join(strings.Fields(lines[1]), " ") != "a SYNCED (1) - r0" || strings.Join(strings.Fields(lines[2]), " ") != "b - STALE (2) r1" {
		t.Errorf("table:\n%s", b.String())
	}
	if err := WriteStatus(&b, st, StatusOptions{Output: "xml"}); err == nil {
		t.Error("-o xml accepted")
	}
	b.Reset()
	if err := WriteStatus(&b, nil, StatusOptions{}); err != nil || !strings.Contains(b.String(), "No proxies") {
		t.Errorf("empty: %v %q", err, b.String())
	}
}

// Findings print compiler style; errors make the command fail, warnings
// alone do not.
func TestWriteFindings(t *testing.T) {
	warn := analysis.Finding{Severity: analysis.SeverityWarning, File: "a.yaml", Line: 7, Kind: "VirtualService", Namespace: "default", Name: "shop", Field: "spec.hosts", Message: "merged"}
	var b bytes.Buffer
	if err := WriteFindings(&b, []analysis.Finding{warn}, ""); err != nil {
		t.Errorf("warnings only: %v", err)
	}
	if !strings.HasPrefix(b.String(), "a.yaml:7: warning: VirtualService default/shop: spec.hosts: merged\n") || !strings.Contains(b.String(), "0 errors, 1 warnings") {
		t.Errorf("output %q", b.String())
	}
	bad := analysis.Finding{Severity: analysis.SeverityError, Source: "kube://default/x", Message: "broken"}
	b.Reset()
	if err := WriteFindings(&b, []analysis.Finding{warn, bad}, OutputJSON); !errors.Is(err, ErrFindings) || !strings.Contains(b.String(), `"errors": 1`) {
		t.Errorf("with an error: %v\n%s", err, b.String())
	}
	if got := FormatFinding(bad); got != "kube://default/x: error: broken" {
		t.Errorf("FormatFinding %q", got)
	}
}

func TestNewClientsRejectsBadAddress(t *testing.T) {
	if _, err := NewClients(ClientOptions{Addrs: []string{"http://"}}); err == nil || !strings.Contains(err.Error(), "--debug-addr") {
		t.Errorf("err %v", err)
	}
	cs, err := NewClients(ClientOptions{})
	if err != nil || len(cs) != 1 || cs[0].Addr() != "http://127.0.0.1:15014" {
		t.Errorf("default: %v %v", cs, err)
	}
}
