package file

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// sortErrors orders problems by file, document number (numerically, so
// document 10 follows document 9), object, field and message.
func sortErrors(errs []*config.Error) {
	slices.SortStableFunc(errs, func(a, b *config.Error) int {
		af, ad := splitSource(a.Source)
		bf, bd := splitSource(b.Source)
		return cmp.Or(
			cmp.Compare(af, bf), cmp.Compare(ad, bd),
			compareKeys(a.Key, b.Key),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message),
		)
	})
}

// splitSource splits "file (document N)", as manifest.DocumentSource
// writes it, into file and N; other sources have document 0.
func splitSource(src string) (string, int) {
	const marker = " (document "
	i := strings.LastIndex(src, marker)
	if i < 0 || !strings.HasSuffix(src, ")") {
		return src, 0
	}
	n, err := strconv.Atoi(src[i+len(marker) : len(src)-1])
	if err != nil {
		return src, 0
	}
	return src[:i], n
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
