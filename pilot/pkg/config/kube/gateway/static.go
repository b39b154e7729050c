package gateway

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// StaticOptions configure a StaticSource.
type StaticOptions struct {
	// Input reads what to convert now (file mode: the folder's Gateway API
	// objects, Services from its ServiceEntries). Required.
	Input func() (Input, error)
	// Queue carries conversions and events: the control plane's shared
	// queue, run by its owner. Required.
	Queue *queue.Queue
	// Convert tunes conversion.
	Convert Options
	// Locate, when set, gives where an object named as conversion names
	// it ("HTTPRoute ns/name", see Source) was read from (file mode: "FILE
	// (document N)"), so that its problems name the file too; "" keeps
	// the object's name as the error's source.
	Locate func(object string) string
	// Clock dates status conditions; default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// StaticSource serves Gateway API objects that come from somewhere other
// than informers (file mode), through the same conversion as Controller:
// ConvertWithStatus on everything, on every Schedule, the generated
// Gateways and VirtualServices served as a model.ConfigStoreController.
// It writes no status anywhere; Status returns what the last conversion
// computed, for /debug/configz.
type StaticSource struct {
	*generated.Source
	opts StaticOptions
	log  *slog.Logger

	mu     sync.RWMutex
	status Status
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
	res := ConvertWithStatus(in, s.opts.Convert, s.opts.Clock.Now())
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
func (s *StaticSource) Status() Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.status
}

// InputOf sorts objects (as the Kubernetes informers deliver them:
// *gw.GatewayClass, *gw.Gateway, ...) into an Input; other types are
// ignored. Services and Namespaces are left for the caller.
func InputOf(objs []metav1.Object) Input {
	var in Input
	for _, o := range objs {
		switch o := o.(type) {
		case *gw.GatewayClass:
			in.GatewayClasses = append(in.GatewayClasses, o)
		case *gw.Gateway:
			in.Gateways = append(in.Gateways, o)
		case *gw.HTTPRoute:
			in.HTTPRoutes = append(in.HTTPRoutes, o)
		case *gw.GRPCRoute:
			in.GRPCRoutes = append(in.GRPCRoutes, o)
		case *gw.TLSRoute:
			in.TLSRoutes = append(in.TLSRoutes, o)
		case *gw.TCPRoute:
			in.TCPRoutes = append(in.TCPRoutes, o)
		case *gw.ReferenceGrant:
			in.ReferenceGrants = append(in.ReferenceGrants, o)
		}
	}
	return in
}

// ServicesFromEntries answers Input.Services from the ServiceEntries of a
// config store, where there is no Kubernetes (file mode): Service NAME of
// namespace NS exists when a ServiceEntry has the host
// NAME.NS.svc.SUFFIX, with that entry's ports (a ServiceEntry of NS
// first, then of any namespace in name order, as hosts are global).
func ServicesFromEntries(store model.ConfigStore, domainSuffix string) func(namespace, name string) *corev1.Service {
	if domainSuffix == "" {
		domainSuffix = model.DefaultDomainSuffix
	}
	return func(namespace, name string) *corev1.Service {
		host := name + "." + namespace + ".svc." + domainSuffix
		entries := store.List(schema.ServiceEntry, "")
		slices.SortStableFunc(entries, func(a, b config.Config) int {
			return boolInt(a.Namespace != namespace) - boolInt(b.Namespace != namespace)
		})
		for _, e := range entries {
			se, ok := e.Spec.(*networking.ServiceEntry)
			if !ok || !slices.Contains(se.GetHosts(), host) {
				continue
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
			for _, p := range se.GetPorts() {
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.GetName(), Port: int32(p.GetNumber())})
			}
			return svc
		}
		return nil
	}
}
