package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
)

// testItems are n resources sorted by name, one with a name longer than
// setVersion's 4 KiB pieces, with content hashes from round.
func testItems(n, round int) []*Resource {
	items := make([]*Resource, n)
	for i := range items {
		name := fmt.Sprintf("outbound|80||svc-%05d.default.svc.cluster.local", i)
		if i == n/2 {
			name += strings.Repeat("x", 5000)
		}
		hash := fmt.Sprintf("%016x", i*1000+round)
		items[i] = &Resource{Name: name, Hash: hash, Any: &anypb.Any{TypeUrl: name, Value: []byte(hash)}}
	}
	return items
}

// TestSetVersionHashesEveryPair holds setVersion to the version's
// definition, one SHA-256 over each item's name length, name and content
// hash in order, whatever pieces it is written in.
func TestSetVersionHashesEveryPair(t *testing.T) {
	for _, n := range []int{0, 1, 3, 1000} {
		items := testItems(n, 0)
		h := sha256.New()
		for _, r := range items {
			h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(r.Name))))
			h.Write([]byte(r.Name))
			h.Write([]byte(r.Hash))
		}
		if got, want := setVersion(items), hex.EncodeToString(h.Sum(nil)[:8]); got != want {
			t.Errorf("%d items: version %s, want %s", n, got, want)
		}
	}
}

// TestPartialTypeSetIsNewTypeSet: a set built from its base with a few
// resources replaced has the version, name index and Anys of the same
// items built anew.
func TestPartialTypeSetIsNewTypeSet(t *testing.T) {
	base := NewTypeSet(testItems(1000, 0))
	items := slices.Clone(base.Items)
	next := testItems(1000, 1)
	at := []int{0, 17, 500, 999}
	for _, i := range at {
		items[i] = next[i]
	}
	got, want := PartialTypeSet(base, items, at, nil), NewTypeSet(items)
	if got.Version != want.Version || got.Version == base.Version {
		t.Errorf("version %s, want %s (base %s)", got.Version, want.Version, base.Version)
	}
	if !maps.Equal(got.ByName, want.ByName) {
		t.Error("name index differs from the one built anew")
	}
	if !slices.Equal(got.Anys, want.Anys) || !slices.Equal(got.Items, want.Items) {
		t.Error("Anys or items differ from those built anew")
	}
	if base.ByName[items[17].Name] == items[17] || base.Anys[17] == items[17].Any {
		t.Error("the base set was changed")
	}
}
