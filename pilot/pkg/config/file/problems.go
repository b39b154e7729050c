package file

import (
	"cmp"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// sortErrors orders problems by file, document number (numerically, so
// document 10 follows document 9), object, field and message, and then
// problems before warnings: a total order, so the list does not depend on
// the order the problems were gathered in.
func sortErrors(errs []*config.Error) {
	slices.SortStableFunc(errs, func(a, b *config.Error) int {
		af, ad := manifest.SplitDocumentSource(a.Source)
		bf, bd := manifest.SplitDocumentSource(b.Source)
		return cmp.Or(
			cmp.Compare(af, bf), cmp.Compare(ad, bd),
			compareKeys(a.Key, b.Key),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message),
			cmp.Compare(warningRank(a), warningRank(b)),
		)
	})
}

func warningRank(e *config.Error) int {
	if e.Warning {
		return 1
	}
	return 0
}

// logNewProblems logs, once, each problem that was not standing after the
// previous scan. Must be called with scanMu held.
func (c *Controller) logNewProblems(problems []*config.Error) {
	now := make(map[string]bool, len(problems))
	for _, e := range problems {
		msg := e.Error()
		now[msg] = true
		if !c.reported[msg] {
			c.log.Warn("config problem", "source", e.Source, "error", msg)
		}
	}
	c.reported = now
}
