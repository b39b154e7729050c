package model

import "github.com/wayfinder-dev/wayfinder/pkg/config"

// ObjectState is what the server knows now about one config object: how
// many connected gateways use the config it produced, how many hold it
// ACKed or NACKed, and its standing config problems. It is the input of
// the status written on Istio objects and of /debug/configz's per-object
// view; the server computes it, the status writers read it, so it lives
// here, below both.
//
// Attribution is per gateway group and coarse: a group's listeners and
// routes (LDS, RDS) come from its Gateways and the VirtualServices bound to
// them, so a NACK of LDS or RDS is counted against all of those; clusters
// and endpoints (CDS, EDS) are shared by every gateway, so a NACK of CDS
// or EDS is counted against every DestinationRule and ServiceEntry.
type ObjectState struct {
	// Gateways is the number of connected gateways using the object.
	Gateways int `json:"gateways"`
	// Acked of them hold, ACKed, the config the last push produced for
	// them; Nacked rejected the last response of a type the object feeds.
	Acked  int `json:"acked"`
	Nacked int `json:"nacked"`
	// FirstNack is the rejection message of the first NACKing gateway by
	// node id (deterministic).
	FirstNack string `json:"firstNack,omitempty"`
	// Errors are the object's standing source and translation problems.
	Errors []*config.Error `json:"-"`
	// Patches are, for an EnvoyFilter, what each of its patches did on
	// the gateway configurations it applies to, summed over them.
	Patches []PatchState `json:"patches,omitempty"`
}

// PatchState is what one EnvoyFilter patch (spec.configPatches[Index]) did
// over the gateway configurations of connected gateways.
type PatchState struct {
	Index     int    `json:"index"`
	ApplyTo   string `json:"applyTo"`
	Operation string `json:"operation"`
	// Configurations is the number of distinct gateway configurations the
	// filter applies to; Matched and Changed count resources over them,
	// Failed those whose patched form did not validate (served without
	// the patch) and Withheld those a gateway rejected (likewise).
	Configurations int `json:"configurations"`
	Matched        int `json:"matched"`
	Changed        int `json:"changed"`
	Failed         int `json:"failed,omitempty"`
	Withheld       int `json:"withheld,omitempty"`
	// Skipped says why the patch did not run on some configuration (its
	// context or proxy match rules it out, or its value is bad).
	Skipped string `json:"skipped,omitempty"`
}
