package push

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Errors returns st's errors, deduplicated and sorted. The caller must
// not hold Options.Lock, which it takes.
func (t *Translator) Errors(st *State) []*config.Error {
	if st == nil {
		return nil
	}
	t.mu.Lock()
	all := slices.Concat(st.Push.Errors, st.serviceErrors, st.endpointErrors)
	for _, key := range slices.Sorted(maps.Keys(st.Groups)) {
		all = append(all, st.Groups[key].errors...)
	}
	t.mu.Unlock()
	return DedupErrors(all)
}

// LogNewErrors logs the translation errors of st that the previous call
// did not see, so a standing problem is logged once rather than on every
// push. The caller holds the push lock, which guards loggedErrors.
func (t *Translator) LogNewErrors(st *State) {
	tr := t.Errors(st)
	now := make(map[string]bool, len(tr))
	for _, e := range tr {
		k := e.Error()
		now[k] = true
		if t.loggedErrors[k] {
			continue
		}
		if e.Warning {
			t.log.Warn("config warning", "err", k)
		} else {
			t.log.Warn("config error", "err", k)
		}
	}
	t.loggedErrors = now
}

// DedupErrors returns errs without repeats (by message), sorted by source
// and message.
func DedupErrors(errs []*config.Error) []*config.Error {
	seen := make(map[string]bool, len(errs))
	out := make([]*config.Error, 0, len(errs))
	for _, e := range errs {
		k := e.Error()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *config.Error) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Error(), b.Error()))
	})
	return out
}
