package gatewayapi

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// StaticOptions configure a StaticSource.
type StaticOptions struct {
	// Input reads what to convert now (file mode: the folder's Gateway API
	// objects, Services from its ServiceEntries). Required.
	Input func() (gatewayapi.Input, error)
	// Queue carries conversions and events: the control plane's shared
	// queue, run by its owner. Required.
	Queue *queue.Queue
	// Convert tunes conversion.
	Convert gatewayapi.Options
	// Locate, when set, gives where an object named as conversion names
	// it ("HTTPRoute ns/name", see gatewayapi.Source) was read from (file
	// mode: "FILE (document N)"), so that its problems name the file too;
	// "" keeps the object's name as the error's source.
	Locate func(object string) string
	// Clock dates status conditions; default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// StaticSource serves Gateway API objects that come from somewhere other
// than informers (file mode), through the same conversion as the
// Kubernetes source: gatewayapi.ConvertWithStatus on everything, on every
// Schedule, the generated Gateways and VirtualServices served as a
// model.ConfigStoreController.
// It writes no status anywhere; Status returns what the last conversion
// computed, for /debug/configz.
type StaticSource struct {
	*generated.Source
	opts StaticOptions
	log  *slog.Logger

	mu     sync.RWMutex
	status gatewayapi.Status
}

var (
	_ model.ConfigStoreController = (*StaticSource)(nil)
	_ model.ConfigErrorReporter   = (*StaticSource)(nil)
)

// NewStaticSource checks opts. Call Schedule whenever what Input reads
// changes; Run converts once at start.
func NewStaticSource(opts StaticOptions) (*StaticSource, error) {
	if opts.Input == nil || opts.Queue == nil {
		return nil, errors.New("gateway: Input and Queue are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &StaticSource{opts: opts, log: opts.Logger.With("source", "gateway-api")}
	var err error
	s.Source, err = generated.NewSource(generated.SourceOptions{
		Name: "Gateway API", ErrPrefix: "gateway", Queue: opts.Queue, Convert: s.convert, Clock: opts.Clock, Logger: s.log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Run queues the first conversion and returns when ctx ends. There are no
// informers: nothing to wait for.
func (s *StaticSource) Run(ctx context.Context) {
	s.Source.Run(ctx, nil)
}

func (s *StaticSource) convert() ([]config.Config, []*config.Error, error) {
	in, err := s.opts.Input()
	if err != nil {
		return nil, nil, err
	}
	res := gatewayapi.ConvertWithStatus(in, s.opts.Convert, s.opts.Clock.Now())
	s.mu.Lock()
	s.status = res.Status
	s.mu.Unlock()
	errs := res.Errors
	if s.opts.Locate != nil {
		errs = make([]*config.Error, len(res.Errors))
		for i, e := range res.Errors {
			errs[i] = e
			if loc := s.opts.Locate(e.Source); loc != "" {
				located := *e
				located.Source, located.Message = loc, e.Message+" ("+e.Source+")"
				errs[i] = &located
			}
		}
	}
	for _, e := range errs {
		s.log.Warn("Gateway API object not fully converted", "error", e.Error())
	}
	return res.Configs, errs, nil
}

// Status is the status computed by the last conversion.
func (s *StaticSource) Status() gatewayapi.Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.status
}
