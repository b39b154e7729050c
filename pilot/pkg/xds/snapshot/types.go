package snapshot

import (
	"slices"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Type indexes: a view holds one TypeSet per served type, in the order ADS
// pushes them (clusters before endpoints, listeners before routes, secrets
// last: Envoy asks for them while warming listeners and clusters).
const (
	CDS = iota
	EDS
	LDS
	RDS
	SDS
	NumTypes
)

// Types are the type URLs served, indexed as above.
var Types = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType, resource.SecretType}

// CoreTypes are the types every Envoy proxy subscribes to; debug output
// shows them even before they are requested. Secrets are shown only once
// requested or present.
var CoreTypes = Types[:SDS]

// typeNames are the short xDS type names used in metric labels, logs and
// debug output, as Istio uses them.
var typeNames = map[string]string{
	resource.ClusterType:  "cds",
	resource.EndpointType: "eds",
	resource.ListenerType: "lds",
	resource.RouteType:    "rds",
	resource.SecretType:   "sds",
}

// ShortType names a type URL for labels; unknown types keep their URL.
func ShortType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return typeURL
}

// MetricType names a type URL for metric labels: one of the served types'
// short names, or "other" for any type a client made up, so clients cannot
// create label values (and series) at will.
func MetricType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return "other"
}

// TypeIndex returns the index of a served type URL.
func TypeIndex(typeURL string) (int, bool) {
	i := slices.Index(Types, typeURL)
	return i, i >= 0
}
