package route

import (
	"fmt"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// reporter collects translation problems. One VirtualService is translated
// once per port and gateway it is bound to, so the same problem can be found
// several times; it is reported once, in the order first found.
type reporter struct {
	errs []*config.Error
	seen map[string]bool
}

func (r *reporter) add(c *config.Config, field string, warning bool, format string, args ...any) {
	r.addError(&config.Error{Source: c.Source, Key: c.Key(), Field: field, Message: fmt.Sprintf(format, args...), Warning: warning})
}

// addError reports e unless an equal problem was reported already.
func (r *reporter) addError(e *config.Error) {
	k := e.Error()
	if e.Warning {
		k = "W " + k
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[k] {
		return
	}
	r.seen[k] = true
	r.errs = append(r.errs, e)
}

// errorf reports a problem that keeps part of c from being used.
func (r *reporter) errorf(c *config.Config, field, format string, args ...any) {
	r.add(c, field, false, format, args...)
}

// warnf reports a problem that does not stop c from being used.
func (r *reporter) warnf(c *config.Config, field, format string, args ...any) {
	r.add(c, field, true, format, args...)
}

// problems gathers the errors found while translating one HTTP route, so the
// route can be skipped as a whole when any of them is fatal.
type problems struct {
	r     *reporter
	c     *config.Config
	fatal bool
	// proxyless is set when the route goes to gRPC clients, not Envoy:
	// Envoy's own limits (RE2 program size) do not apply.
	proxyless bool
}

func (p *problems) errorf(field, format string, args ...any) {
	p.fatal = true
	p.r.errorf(p.c, field, format, args...)
}

func (p *problems) warnf(field, format string, args ...any) {
	p.r.warnf(p.c, field, format, args...)
}
