package xds

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// DefaultEndpointDebounce returns the endpoint debouncer's defaults
// (push.DefaultEndpointDebounce, which says why they are what they are).
func DefaultEndpointDebounce() debounce.Options { return push.DefaultEndpointDebounce() }
