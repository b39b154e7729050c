package bootstrap

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file"
	filegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// GatewayAPIOptions configure the Kubernetes Gateway API, in both modes.
type GatewayAPIOptions struct {
	// Disabled turns the Gateway API off (--gateway-api=false): no
	// informers of its kinds, no conversion, no status; in file mode its
	// documents are still checked but serve nothing.
	Disabled bool
}

// fileStore is file mode's config store: the folder's Istio config and,
// unless the Gateway API is off, what its Gateway API objects convert to.
// Both run on one event queue, which Run runs.
type fileStore struct {
	*aggregateStore
	queue   *queue.Queue
	gateway *filegatewayapi.StaticSource // nil when the Gateway API is off
}

// newFileStore builds file mode's store.
func newFileStore(opts Options) (*fileStore, *file.Controller, error) {
	q := queue.New(queue.Options{Logger: opts.Logger})
	fc, err := file.New(file.Options{Dir: opts.ConfigDir, RescanInterval: opts.RescanInterval,
		Settle: opts.ConfigSettle, EmptyGrace: opts.ConfigEmptyGrace, Logger: opts.Logger, Queue: q})
	if err != nil {
		return nil, nil, err
	}
	fs := &fileStore{queue: q}
	if opts.GatewayAPI.Disabled {
		if n := len(fc.GatewayAPIObjects()); n > 0 {
			opts.Logger.Info("the Gateway API is off (--gateway-api=false); Gateway API objects of the config folder are not served", "objects", n)
		}
		fs.aggregateStore = newAggregateStore([]model.ConfigStoreController{fc})
		return fs, fc, nil
	}
	// where maps each object of the last Input to its file and document;
	// Input and Locate run one after the other on the queue.
	var where map[string]string
	gs, err := filegatewayapi.NewStaticSource(filegatewayapi.StaticOptions{
		Input: func() (gatewayapi.Input, error) {
			objs := fc.GatewayAPIObjects()
			list := make([]metav1.Object, 0, len(objs))
			where = make(map[string]string, len(objs))
			for _, o := range objs {
				list = append(list, o.Object)
				where[gatewayapi.Source(o.Kind.Name, o.Object)] = o.Source
			}
			in := gatewayapi.InputOf(list)
			in.Services = filegatewayapi.ServicesFromEntries(fc, opts.DomainSuffix)
			// backendRefs of kind Hostname name the folder's ServiceEntries.
			in.ServiceEntries = fc.List(schema.ServiceEntry, "")
			return in, nil
		},
		Locate: func(object string) string { return where[object] },
		Queue:  q, Convert: gatewayapi.Options{DomainSuffix: opts.DomainSuffix}, Logger: opts.Logger,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("gateway API: %w", err)
	}
	// Conversion reads the Gateway API objects and, for backends, the
	// ServiceEntries.
	fc.OnGatewayAPIChange(gs.Schedule)
	fc.RegisterEventHandler(schema.ServiceEntry, func(config.Config, config.Config, model.Event) { gs.Schedule() })
	fs.gateway = gs
	fs.aggregateStore = newAggregateStore([]model.ConfigStoreController{fc, gs})
	return fs, fc, nil
}

// Run runs the queue and both sources until ctx ends.
func (s *fileStore) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.queue.Run(ctx) })
	s.aggregateStore.Run(ctx)
	wg.Wait()
}

// gatewayAPIStatus is the status the last Gateway API conversion
// computed, for /debug/configz; nil when the Gateway API is off.
func (s *fileStore) gatewayAPIStatus() func() gatewayapi.Status {
	if s.gateway == nil {
		return nil
	}
	return s.gateway.Status
}
