package floorserver

import (
	"os"
	"path/filepath"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

// writeDump writes one response per type; rdsVersion varies the routes.
func writeDump(t *testing.T, dir, rdsVersion string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for typeURL, name := range load.DumpFiles {
		resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "v", Nonce: "pilot-nonce"}
		if typeURL == resource.RouteType {
			resp.VersionInfo = rdsVersion
			resp.Resources = []*anypb.Any{{TypeUrl: typeURL, Value: []byte(rdsVersion)}}
		}
		b, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadDumpRewritesNonces(t *testing.T) {
	dir := t.TempDir()
	writeDump(t, dir, "r1")
	d, err := LoadDump(dir, "cold", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 4 {
		t.Fatalf("%d types", len(d))
	}
	var resp discoveryv3.DiscoveryResponse
	if err := proto.Unmarshal(d[resource.RouteType].Bytes, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetNonce() != "cold/rds.pb" || resp.GetVersionInfo() != "r1" {
		t.Fatalf("nonce %q version %q", resp.GetNonce(), resp.GetVersionInfo())
	}
}

func TestLoadDumpErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDump(dir, "cold", false); err == nil {
		t.Error("empty folder accepted")
	}
	writeDump(t, dir, "r1")
	// A listener response saved as the clusters.
	if err := os.Rename(filepath.Join(dir, "lds.pb"), filepath.Join(dir, "cds.pb")); err != nil {
		t.Fatal(err)
	}
	writeDump(t, filepath.Join(dir, "x"), "r1")
	b, _ := os.ReadFile(filepath.Join(dir, "x", "lds.pb"))
	_ = os.WriteFile(filepath.Join(dir, "lds.pb"), b, 0o644)
	if _, err := LoadDump(dir, "cold", false); err == nil {
		t.Error("mismatched type accepted")
	}
}

func TestUpdateSharesUnchangedFrames(t *testing.T) {
	root := t.TempDir()
	writeDump(t, filepath.Join(root, "cold"), "r1")
	writeDump(t, filepath.Join(root, "update"), "r2")
	cold, err := LoadDump(filepath.Join(root, "cold"), "cold", false)
	if err != nil {
		t.Fatal(err)
	}
	update, err := LoadDump(filepath.Join(root, "update"), "update", false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cold, update, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Update() {
		t.Fatal("update refused")
	}
	if s.Update() {
		t.Error("second update accepted")
	}
	d := s.dump()
	for typeURL := range load.DumpFiles {
		same := d[typeURL] == cold[typeURL]
		if want := typeURL != resource.RouteType; same != want {
			t.Errorf("%s: frame shared with cold = %v, want %v", typeURL, same, want)
		}
	}
	if _, err := New(Dump{}, nil, false, nil); err == nil {
		t.Error("empty cold dump accepted")
	}
}
