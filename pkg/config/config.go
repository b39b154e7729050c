// Package config holds the typed config object every source produces and
// every consumer reads: metadata plus an istio.io/api proto spec.
package config

import (
	"fmt"
	"maps"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Key names one config object.
type Key struct {
	Kind      schema.Kind
	Namespace string
	Name      string
}

// String renders "Kind namespace/name", the form used in every message.
func (k Key) String() string { return fmt.Sprintf("%s %s/%s", k.Kind, k.Namespace, k.Name) }

// Meta is the metadata shared by all kinds.
type Meta struct {
	Kind              schema.Kind
	Name              string
	Namespace         string
	Labels            map[string]string
	Annotations       map[string]string
	ResourceVersion   string
	Generation        int64
	CreationTimestamp time.Time
	// Source says where the object came from, for error messages: a file
	// and document ("samples/gw.yaml#2") or a Kubernetes reference.
	Source string
}

// Config is one config object. Values read from a store are shared and
// must not be mutated: DeepCopy first.
type Config struct {
	Meta
	Spec proto.Message
}

// Key returns the object's key.
func (c *Config) Key() Key { return Key{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name} }

// DeepCopy returns a copy that shares nothing with c.
func (c Config) DeepCopy() Config {
	out := c
	out.Labels = maps.Clone(c.Labels)
	out.Annotations = maps.Clone(c.Annotations)
	if c.Spec != nil {
		out.Spec = proto.Clone(c.Spec)
	}
	return out
}

// SameContent reports whether a and b carry the same user-visible content:
// spec, labels and annotations. ResourceVersion and Source are ignored, so a
// rewrite that changes nothing is not an update.
func SameContent(a, b Config) bool {
	return a.Kind == b.Kind && a.Name == b.Name && a.Namespace == b.Namespace &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		a.CreationTimestamp.Equal(b.CreationTimestamp) && proto.Equal(a.Spec, b.Spec)
}
