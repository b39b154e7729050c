// Package envoyfilter applies EnvoyFilter patches to a gateway's translated
// listeners, route configurations and clusters, with istiod 1.29's
// semantics (pilot/pkg/networking/core/envoyfilter, pilot/pkg/model
// envoyfilter.go): Select picks the filters that apply to a gateway proxy,
// in istiod's order; Apply runs their patches over the resources.
//
// Beyond istiod, a patch can never take a gateway down: patches run one at
// a time per resource on a clone, and a result that fails ValidateAll (or
// carries a typed config that does not unpack) is dropped for that
// resource, which is served as it was before that patch. The Result says,
// per patch, how many resources it matched and changed, which it could not
// change and why, and which patches touched each resource, so that a NACK
// can be attributed to them and the patch withheld (Input.Withhold).
//
// Apply never mutates its inputs: they are shared by other gateway groups
// and caches. A changed resource is a clone; returned slices are new.
package envoyfilter
