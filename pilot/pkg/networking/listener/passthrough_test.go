package listener

import (
	"slices"
	"testing"
)

// A tls route's sniHosts are kept as far as the server exposes them, each
// as the more specific of the two patterns.
func TestNarrowSNI(t *testing.T) {
	cases := []struct {
		sni, server, want []string
		ok                bool
	}{
		{[]string{"a.example.com"}, nil, []string{"a.example.com"}, true},
		{[]string{"*"}, nil, nil, true},
		{[]string{"*"}, []string{"a.com", "b.com"}, []string{"a.com", "b.com"}, true},
		{[]string{"*.example.com"}, []string{"db.example.com", "other.org"}, []string{"db.example.com"}, true},
		{[]string{"x.db.example.com"}, []string{"*.db.example.com"}, []string{"x.db.example.com"}, true},
		{[]string{"*.db.example.com"}, []string{"*.example.com"}, []string{"*.db.example.com"}, true},
		{[]string{"a.org"}, []string{"a.com"}, nil, false},
	}
	for _, tc := range cases {
		got, ok := narrowSNI(tc.sni, tc.server)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("narrowSNI(%v, %v) = %v %v, want %v %v", tc.sni, tc.server, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"a.com", "a.com", true}, {"*", "x.org", true}, {"*.a.com", "b.a.com", true}, {"b.a.com", "*.a.com", true}, {"*.a.com", "a.com", false}, {"a.com", "b.com", false}} {
		if got := hostsMatch(tc.a, tc.b); got != tc.want {
			t.Errorf("hostsMatch(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
