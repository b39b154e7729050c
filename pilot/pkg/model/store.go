// Package model is the seam between config sources and translation: the
// config store interfaces sources implement, the push requests handlers
// produce, the proxy identity, and the push context translators read.
package model

import (
	"context"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Event is what happened to a config object.
type Event uint8

const (
	EventAdd Event = iota + 1
	EventUpdate
	EventDelete
)

func (e Event) String() string {
	switch e {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// EventHandler is called once per object change. For EventAdd old is the
// zero Config; for EventDelete cur is the last known object. Handlers must
// not mutate either.
type EventHandler func(old, cur config.Config, event Event)

// ConfigStore reads config. Returned objects are shared: do not mutate them.
type ConfigStore interface {
	// Get returns the object or nil.
	Get(kind schema.Kind, namespace, name string) *config.Config
	// List returns the objects of kind in namespace ("" for all), sorted
	// by namespace then name, in a slice that is the caller's (the
	// objects are shared and must not be mutated).
	List(kind schema.Kind, namespace string) []config.Config
}

// ConfigStoreController is a ConfigStore that watches a source and tells
// registered handlers about every change. File mode and Kubernetes mode
// both implement it.
type ConfigStoreController interface {
	ConfigStore
	// RegisterEventHandler adds a handler for kind. A handler registered
	// after objects were loaded is still given an add for each of them.
	RegisterEventHandler(kind schema.Kind, handler EventHandler)
	// Run watches the source until ctx is cancelled.
	Run(ctx context.Context)
	// HasSynced reports whether the first full load has been delivered to
	// every handler.
	HasSynced() bool
}

// ConfigErrorReporter is implemented by stores that reject input: it returns
// the problems currently standing (a file that does not parse, an object
// that fails validation), sorted by source.
type ConfigErrorReporter interface {
	ConfigErrors() []*config.Error
}
