package model

import (
	"maps"
	"slices"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// PushRequest asks for config to be recomputed and pushed. Requests that
// arrive close together are merged by the debouncer.
type PushRequest struct {
	// Full means config other than endpoints changed: everything is rebuilt.
	// A request that is not full only changes endpoints (EDS).
	Full bool
	// ConfigsUpdated is the set of objects that changed; empty means
	// "unknown, assume everything".
	ConfigsUpdated map[config.Key]struct{}
	// Reasons counts why the push happened, for metrics and logs.
	Reasons map[string]int
	// Start is when the first merged change was seen.
	Start time.Time
}

// Merge combines two requests into a new one; either may be nil. Neither
// input is modified.
func (pr *PushRequest) Merge(other *PushRequest) *PushRequest {
	if pr == nil {
		return other
	}
	if other == nil {
		return pr
	}
	out := &PushRequest{
		Full:           pr.Full || other.Full,
		ConfigsUpdated: make(map[config.Key]struct{}, len(pr.ConfigsUpdated)+len(other.ConfigsUpdated)),
		Reasons:        make(map[string]int, len(pr.Reasons)+len(other.Reasons)),
		Start:          pr.Start,
	}
	if out.Start.IsZero() || (!other.Start.IsZero() && other.Start.Before(out.Start)) {
		out.Start = other.Start
	}
	// An empty set means everything, and stays so: merged with a
	// Gateway edit, a mesh config change or a secret push must not become
	// a push of that Gateway alone.
	if len(pr.ConfigsUpdated) > 0 && len(other.ConfigsUpdated) > 0 {
		maps.Copy(out.ConfigsUpdated, pr.ConfigsUpdated)
		maps.Copy(out.ConfigsUpdated, other.ConfigsUpdated)
	}
	for r, n := range pr.Reasons {
		out.Reasons[r] += n
	}
	for r, n := range other.Reasons {
		out.Reasons[r] += n
	}
	return out
}

// ReasonList returns the reasons sorted, for logs.
func (pr *PushRequest) ReasonList() []string {
	return slices.Sorted(maps.Keys(pr.Reasons))
}
