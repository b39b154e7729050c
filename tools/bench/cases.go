package main

import (
	"fmt"
	"strconv"
	"strings"
)

// benchCase is one cell of the matrix, optionally with gateway policies
// beside the usual workload (see tools/workload's security.go).
type benchCase struct {
	Services int `json:"services"`
	Gateways int `json:"gateways"`
	// AuthorizationPolicies and RequestAuthentications selecting the
	// gateways, written with the workload.
	AuthorizationPolicies  int `json:"authorization_policies,omitempty"`
	RequestAuthentications int `json:"request_authentications,omitempty"`
	EnvoyFilters           int `json:"envoy_filters,omitempty"`
}

// String is the case as --cases spells it: SERVICESxGATEWAYS, then
// +apA and +raR when it has policies.
func (c benchCase) String() string {
	s := fmt.Sprintf("%dx%d", c.Services, c.Gateways)
	if c.AuthorizationPolicies > 0 {
		s += fmt.Sprintf("+ap%d", c.AuthorizationPolicies)
	}
	if c.RequestAuthentications > 0 {
		s += fmt.Sprintf("+ra%d", c.RequestAuthentications)
	}
	if c.EnvoyFilters > 0 {
		s += fmt.Sprintf("+ef%d", c.EnvoyFilters)
	}
	return s
}

// hasPolicies reports whether the case adds gateway policies.
func (c benchCase) hasPolicies() bool {
	return c.AuthorizationPolicies > 0 || c.RequestAuthentications > 0 || c.EnvoyFilters > 0
}

// label is the case in the result tables: "1000 x 500", and the policies
// when there are any ("1000 x 500 + 500 AP, 100 RA").
func (c benchCase) label() string {
	s := fmt.Sprintf("%d x %d", c.Services, c.Gateways)
	if c.AuthorizationPolicies > 0 || c.RequestAuthentications > 0 {
		s += fmt.Sprintf(" + %d AP, %d RA", c.AuthorizationPolicies, c.RequestAuthentications)
	}
	if c.EnvoyFilters > 0 {
		s += fmt.Sprintf(" + %d EnvoyFilters", c.EnvoyFilters)
	}
	return s
}

// The matrix, and the quick subset.
var (
	fullMatrix  = "100x100,100x500,1000x100,1000x500,5000x100,5000x500"
	quickMatrix = "100x100,1000x100"
)

// parseCases reads "SERVICESxGATEWAYS[+apA][+raR],..." (e.g.
// "100x100,1000x500,1000x500+ap500+ra100"): +apA adds A
// AuthorizationPolicies and +raR R RequestAuthentications selecting the
// gateways.
func parseCases(s string) ([]benchCase, error) {
	var out []benchCase
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		c, err := parseCase(part)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cases in %q", s)
	}
	return out, nil
}

func parseCase(part string) (benchCase, error) {
	bad := fmt.Errorf("case %q: want SERVICESxGATEWAYS[+apA][+raR], e.g. 1000x500 or 1000x500+ap500+ra100", part)
	matrix, policies, _ := strings.Cut(part, "+")
	a, b, ok := strings.Cut(matrix, "x")
	n, err1 := atoi(a)
	p, err2 := atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || p < 1 {
		return benchCase{}, bad
	}
	c := benchCase{Services: n, Gateways: p}
	if policies == "" {
		if strings.HasSuffix(part, "+") {
			return benchCase{}, bad
		}
		return c, nil
	}
	seen := map[string]bool{}
	for opt := range strings.SplitSeq(policies, "+") {
		var dst *int
		var num string
		switch {
		case strings.HasPrefix(opt, "ap"):
			dst, num = &c.AuthorizationPolicies, opt[2:]
		case strings.HasPrefix(opt, "ra"):
			dst, num = &c.RequestAuthentications, opt[2:]
		case strings.HasPrefix(opt, "ef"):
			dst, num = &c.EnvoyFilters, opt[2:]
		default:
			return benchCase{}, bad
		}
		v, err := atoi(num)
		if err != nil || v < 1 || seen[opt[:2]] {
			return benchCase{}, bad
		}
		seen[opt[:2]] = true
		*dst = v
	}
	return c, nil
}

// atoi reads a decimal count, allowing _ between digits (1_000).
func atoi(s string) (int, error) { return strconv.Atoi(strings.ReplaceAll(s, "_", "")) }
