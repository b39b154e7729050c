package gatewayapi

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// StatusInput returns what conversion reads now, from the informer caches:
// the objects with their current status, from which the status writer
// computes (gatewayapi.ConvertWithStatus) and compares. Empty before Run.
func (c *Controller) StatusInput() (gatewayapi.Input, error) { return c.input() }

// Status is the status computed by the last conversion, which runs on
// every change of what it reads: the status writer takes it from here
// rather than converting everything again on each of its passes. Empty
// before the first conversion.
func (c *Controller) Status() gatewayapi.Status {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.status
}

// ConvertOptions are the options conversion runs with.
func (c *Controller) ConvertOptions() gatewayapi.Options { return c.opts.Convert }

// Client is the Gateway API client, for status writes.
func (c *Controller) Client() kclient.GatewayAPI { return c.opts.Client }
