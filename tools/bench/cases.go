package main

import (
	"fmt"
	"strconv"
	"strings"
)

// benchCase is one cell of the matrix.
type benchCase struct {
	Services int `json:"services"`
	Gateways int `json:"gateways"`
}

func (c benchCase) String() string { return fmt.Sprintf("%dx%d", c.Services, c.Gateways) }

// The matrix, and the quick subset.
var (
	fullMatrix  = "100x100,100x500,1000x100,1000x500,5000x100,5000x500"
	quickMatrix = "100x100,1000x100"
)

// parseCases reads "SERVICESxGATEWAYS,..." (e.g. "100x100,1000x500").
func parseCases(s string) ([]benchCase, error) {
	var out []benchCase
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		a, b, ok := strings.Cut(part, "x")
		n, err1 := strconv.Atoi(strings.ReplaceAll(a, "_", ""))
		p, err2 := strconv.Atoi(strings.ReplaceAll(b, "_", ""))
		if !ok || err1 != nil || err2 != nil || n < 1 || p < 1 {
			return nil, fmt.Errorf("case %q: want SERVICESxGATEWAYS, e.g. 1000x500", part)
		}
		out = append(out, benchCase{Services: n, Gateways: p})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cases in %q", s)
	}
	return out, nil
}
