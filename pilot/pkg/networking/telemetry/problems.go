package telemetry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// MeshConfigSource is the Source of problems that come from the mesh
// config rather than from a Telemetry object.
const MeshConfigSource = "mesh config"

// problem is one thing Build left out: about a provider (named by the
// Telemetries that use it, or the mesh config when none does), or about
// a mesh config field.
type problem struct {
	provider string // empty: a mesh config field
	field    string // the mesh config field, when provider is empty
	msg      string
}

func (b *builder) providerProblem(provider, format string, args ...any) {
	b.problems = append(b.problems, problem{provider: provider, msg: fmt.Sprintf(format, args...)})
}

func (b *builder) meshProblem(field, format string, args ...any) {
	b.problems = append(b.problems, problem{field: field, msg: fmt.Sprintf(format, args...)})
}

// attribute turns the problems into errors, sorted and without
// duplicates. A provider's problem is reported against every reference
// to it in the applied Telemetries (`spec.accessLogging[0].providers[1].name`):
// that part of the Telemetry is not served. A provider no applied
// Telemetry names came from the mesh config's defaultProviders; its
// problem, like a mesh config field's, is a warning on the mesh config,
// whose fallback applies instead.
func (b *builder) attribute(applied []Telemetry) []*config.Error {
	var out []*config.Error
	for _, p := range b.problems {
		if p.provider == "" {
			out = append(out, &config.Error{Source: MeshConfigSource, Field: p.field, Warning: true, Message: p.msg})
			continue
		}
		refs := providerRefs(applied, p.provider)
		if len(refs) == 0 {
			field := "extensionProviders"
			if b.isDefaultProvider(p.provider) {
				field = "defaultProviders"
			}
			out = append(out, &config.Error{Source: MeshConfigSource, Field: field, Warning: true, Message: p.msg})
			continue
		}
		out = append(out, refs...)
		for _, e := range refs {
			e.Message = p.msg
		}
	}
	slices.SortFunc(out, func(x, y *config.Error) int { return strings.Compare(x.Error(), y.Error()) })
	return slices.CompactFunc(out, func(x, y *config.Error) bool { return x.Error() == y.Error() && x.Warning == y.Warning })
}

// providerRefs are errors (message unset) at every place an applied
// Telemetry names provider, compared as istiod's fetchProvider compares.
func providerRefs(applied []Telemetry, provider string) []*config.Error {
	var out []*config.Error
	seen := map[config.Key]bool{}
	for _, t := range applied {
		key := config.Key{Kind: schema.Telemetry, Namespace: t.Namespace, Name: t.Name}
		if seen[key] {
			continue
		}
		seen[key] = true
		for i, l := range t.Spec.GetAccessLogging() {
			for j, ref := range l.GetProviders() {
				if strings.EqualFold(ref.GetName(), provider) {
					out = append(out, &config.Error{Key: key, Field: fmt.Sprintf("spec.accessLogging[%d].providers[%d].name", i, j)})
				}
			}
		}
		for i, tr := range t.Spec.GetTracing() {
			for j, ref := range tr.GetProviders() {
				if strings.EqualFold(ref.GetName(), provider) {
					out = append(out, &config.Error{Key: key, Field: fmt.Sprintf("spec.tracing[%d].providers[%d].name", i, j)})
				}
			}
		}
	}
	return out
}

func (b *builder) isDefaultProvider(name string) bool {
	d := b.mesh.GetDefaultProviders()
	for _, n := range slices.Concat(d.GetAccessLogging(), d.GetTracing(), d.GetMetrics()) {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
