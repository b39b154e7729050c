package gatewayapi

import (
	"slices"
	"testing"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// Route hostnames are narrowed to the listener's, as the specification's
// hostname matching describes.
func TestIntersectHosts(t *testing.T) {
	h := func(s string) *gw.Hostname { v := gw.Hostname(s); return &v }
	for _, tc := range []struct {
		listener *gw.Hostname
		route    []gw.Hostname
		want     []string
	}{
		{nil, nil, []string{"*"}},
		{h("foo.com"), nil, []string{"foo.com"}},
		{nil, []gw.Hostname{"Foo.com", "*.bar.com"}, []string{"foo.com", "*.bar.com"}},
		{h("*.example.com"), []gw.Hostname{"a.example.com", "example.com", "a.b.example.com", "other.org"}, []string{"a.example.com", "a.b.example.com"}},
		{h("*.example.com"), []gw.Hostname{"*.example.com"}, []string{"*.example.com"}},
		{h("*.example.com"), []gw.Hostname{"*.a.example.com"}, []string{"*.a.example.com"}},
		{h("a.example.com"), []gw.Hostname{"*.example.com", "*.com"}, []string{"a.example.com"}},
		{h("a.example.com"), []gw.Hostname{"b.example.com"}, nil},
		{h("example.com"), []gw.Hostname{"*.example.com"}, nil},
	} {
		if got := intersectHosts(tc.listener, tc.route); !slices.Equal(got, tc.want) {
			t.Errorf("listener %v, route %v: %v, want %v", deref(tc.listener, "<none>"), tc.route, got, tc.want)
		}
	}
}

// Matches are ordered by the Gateway API's precedence, then by age and
// position.
func TestPrecedence(t *testing.T) {
	ordered := []precedence{
		{kind: pathExact, length: 8},
		{kind: pathExact, length: 4},
		{kind: pathRegex, length: 10},
		{kind: pathPrefix, length: 7},
		{kind: pathPrefix, length: 4, method: true},
		{kind: pathPrefix, length: 4, headers: 2},
		{kind: pathPrefix, length: 4, headers: 1, queries: 3},
		{kind: pathPrefix, length: 4, headers: 1, queries: 1},
		{kind: pathPrefix, length: 4, order: 1},
		{kind: pathPrefix, length: 4, order: 2, rule: 0, match: 1},
		{kind: pathPrefix, length: 4, order: 2, rule: 1, match: 0},
		{kind: pathPrefix, length: 1},
	}
	shuffled := slices.Clone(ordered)
	slices.Reverse(shuffled)
	slices.SortStableFunc(shuffled, precedence.compare)
	if !slices.Equal(shuffled, ordered) {
		t.Errorf("sorted %v\nwant   %v", shuffled, ordered)
	}
}
