package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/jwks"
)

// Server is a running pilot-discovery.
type Server struct {
	opts      Options
	store     model.ConfigStoreController
	kube      *kubeMode // nil in file mode
	mesh      *meshSource
	discovery *xds.DiscoveryServer
	// jwks is the RequestAuthentication key set cache, refreshed by Run.
	jwks *jwks.Resolver
	grpc *grpc.Server // nil: no plaintext port
	http *http.Server
	// secure is the TLS ADS server (nil: no secure port) and sec what
	// authenticates its clients and the debug endpoints.
	secure *grpc.Server
	sec    *secureParts

	grpcListener   net.Listener
	secureListener net.Listener
	httpListener   net.Listener
	ready          chan struct{}
	// drained waits for the gRPC servers' GracefulStop started by drain;
	// nil when drain did not run.
	drained *sync.WaitGroup
	// httpRegistry receives the debug listener's metrics.
	httpRegistry prometheus.Registerer
}

// NewServer builds every part and binds both listeners, so an address in
// use fails here, before anything runs.
func NewServer(opts Options) (s *Server, err error) {
	opts.applyDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	xopts := xds.Options{
		Debounce:            opts.Debounce,
		EndpointDebounce:    opts.EndpointDebounce,
		Logger:              opts.Logger,
		Registry:            registry,
		Limits:              opts.Limits.XDS,
		WarmGateways:        opts.WarmGateways,
		KeepRejectedPatches: opts.KeepRejectedEnvoyFilterPatches,
		Scoping:             model.Scoping{RootNamespace: opts.RootNamespace, DomainSuffix: opts.DomainSuffix},
	}
	dopts := debugOptions{replica: opts.PodName, registry: registry}
	var (
		store   model.ConfigStoreController
		kube    *kubeMode
		fileCtl *file.Controller // file mode's
	)
	if opts.kubernetesMode() {
		var sources []model.ConfigStoreController
		kube, sources, err = newKubeMode(opts, registry)
		if err != nil {
			return nil, fmt.Errorf("kubernetes config source: %w", err)
		}
		defer func() {
			if err != nil {
				kube.broadcaster.Shutdown()
			}
		}()
		agg := newAggregateStore(sources, kube.registry)
		store = agg
		xopts.Store, xopts.Errors = agg, agg
		xopts.Registries = []model.ServiceDiscovery{kube.registry}
		xopts.Secrets = kube.secrets
		xopts.SecretAuthorizer = kube.secretAuthorizer()
		if kube.gatewayAPI != nil {
			xopts.GatewaySecretGrants = kube.gatewayAPI
			dopts.sections = append(dopts.sections, gatewayAPISection(kube.gatewayAPI.Status))
		}
	} else {
		fs, fc, err := newFileStore(opts)
		if err != nil {
			return nil, fmt.Errorf("config source: %w", err)
		}
		fileCtl = fc
		store = fs
		xopts.Store, xopts.Errors = fs, fs
		if st := fs.gatewayAPIStatus(); st != nil {
			dopts.sections = append(dopts.sections, gatewayAPISection(st))
		}
	}
	meshSrc, err := newMeshSource(opts, kube)
	if err != nil {
		return nil, err
	}
	xopts.Mesh = meshSrc.current
	jwksResolver, setJWKSPush := newJWKSResolver(opts.Logger, registry)
	xopts.JWKS = jwksResolver
	dopts.sections = append(dopts.sections, meshSrc.section())
	meshSrc.registerMetrics(registry)
	sec, err := newSecureParts(opts, kube, registry)
	if err != nil {
		return nil, err
	}
	xopts.AuthFailures = sec.failures
	if sec.tokens != nil {
		dopts.auth = &security.DebugAuth{Tokens: sec.tokens, AdminNamespaces: opts.Security.DebugAdminNamespaces,
			AdminServiceAccounts: opts.Security.DebugAdminServiceAccounts, Admission: sec.debugAdmission}
		if len(opts.Security.DebugAdminNamespaces)+len(opts.Security.DebugAdminServiceAccounts) == 0 {
			opts.Logger.Info("no debug admins: without --pod-namespace, --debug-admin-namespaces or --debug-admin-service-accounts, a token reads only its own namespace's proxies")
		}
	}
	ds := xds.NewDiscoveryServer(xopts)
	if fileCtl != nil {
		// A rescan's changes are one batch: a lone edit is pushed as soon as
		// all of it has reached the handlers.
		fileCtl.OnBatch(ds.ConfigBatchComplete)
	}
	if kube != nil {
		if opts.GatewayDeploy.DefaultProxyConfig == nil {
			opts.GatewayDeploy.DefaultProxyConfig = meshSrc.defaultProxyConfig
		}
		if err = kube.addIstioStatus(opts, ds, sec.caPEM); err != nil {
			return nil, err
		}
		kube.registerStatusMetrics(registry)
		kube.registry.AppendPushHandler(ds.ConfigUpdate)
		kube.pushSecret = func() {
			ds.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"secret": 1}, Start: time.Now()})
		}
	}
	meshSrc.setPush(ds.ConfigUpdate)
	setJWKSPush(ds.ConfigUpdate)
	s = &Server{opts: opts, store: store, kube: kube, mesh: meshSrc, jwks: jwksResolver, discovery: ds, sec: sec, ready: make(chan struct{})}

	grpcOpts := grpcServerOptions(opts.Limits)
	if opts.GRPCAddr != "" {
		s.grpc = grpc.NewServer(append(slices.Clone(grpcOpts), opts.GRPCServerOptions...)...)
		ds.Register(s.grpc)
	}
	if sec.keyPair != nil {
		// The same discovery server behind both ports: one state, one push.
		if s.secure, err = newSecureGRPC(opts, sec, grpcOpts); err != nil {
			return nil, err
		}
		ds.Register(s.secure)
	}

	s.http = newHTTPServer(debugHandler(ds, dopts), opts.Security.DebugServer)
	s.httpRegistry = registry

	for _, k := range schema.Kinds() {
		store.RegisterEventHandler(k, s.onConfigEvent)
	}

	if err := s.listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// onConfigEvent turns one object change into a push request; the
// discovery server's debouncer merges requests that arrive together.
func (s *Server) onConfigEvent(old, cur config.Config, ev model.Event) {
	key := cur.Key()
	s.discovery.ConfigUpdate(&model.PushRequest{
		Full:           true,
		ConfigsUpdated: map[config.Key]struct{}{key: {}},
		Reasons:        map[string]int{"config-" + ev.String(): 1},
		Start:          time.Now(),
	})
}

// listen binds every configured address; on failure none stays bound.
func (s *Server) listen() (err error) {
	var bound []net.Listener
	defer func() {
		if err != nil {
			for _, l := range bound {
				l.Close()
			}
		}
	}()
	bind := func(what, addr string, l *net.Listener) error {
		if *l, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("%s address %s: %w", what, addr, err)
		}
		bound = append(bound, *l)
		return nil
	}
	if s.grpc != nil {
		if err := bind("gRPC", s.opts.GRPCAddr, &s.grpcListener); err != nil {
			return err
		}
	}
	if s.secure != nil {
		if err := bind("secure gRPC", s.opts.Security.SecureGRPCAddr, &s.secureListener); err != nil {
			return err
		}
	}
	if err := bind("HTTP", s.opts.HTTPAddr, &s.httpListener); err != nil {
		return err
	}
	d := s.opts.Security.DebugServer
	s.httpListener = security.LimitListener(s.httpListener,
		security.ListenerLimits{Max: d.MaxConnections, PerPeer: d.MaxConnectionsPerPeer}, s.httpRegistry)
	return nil
}

// newHTTPServer is the debug and metrics server, bounded by o (see
// DebugServerOptions for why it has no write timeout).
func newHTTPServer(h http.Handler, o DebugServerOptions) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
	}
}

// GRPCAddr is the address plaintext ADS listens on (useful with port 0);
// nil when there is no plaintext port.
func (s *Server) GRPCAddr() net.Addr {
	if s.grpcListener == nil {
		return nil
	}
	return s.grpcListener.Addr()
}

// SecureGRPCAddr is the address TLS ADS listens on; nil when there is no
// secure port.
func (s *Server) SecureGRPCAddr() net.Addr {
	if s.secureListener == nil {
		return nil
	}
	return s.secureListener.Addr()
}

// RootCertPEM is the self-signed CA certificate the secure port's serving
// certificate chains to (as published in ConfigMap wayfinder-ca-root-cert);
// nil when the certificate comes from files or there is no secure port.
func (s *Server) RootCertPEM() []byte { return s.sec.caPEM }

// HTTPAddr is the address of the debug and metrics server.
func (s *Server) HTTPAddr() net.Addr { return s.httpListener.Addr() }

// Ready is closed once the config source has synced and the first push
// has been computed.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run serves until stop is cancelled, then releases the status Leases,
// drains the ADS streams over DrainDuration (drain.go) and closes the
// listeners. It returns the first serving error, or nil on a clean stop.
func (s *Server) Run(stop context.Context) error {
	// Everything runs until shutdown cancels ctx, not until stop ends: the
	// ADS streams must outlive stop to be drained (see drain.go).
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	defer cancel()
	log := s.opts.Logger
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	// The status writers stop first on shutdown, releasing their Leases so
	// that another replica writes status while this one drains.
	statusCtx, stopStatus := context.WithCancel(ctx)
	defer stopStatus()
	run(func() { s.store.Run(ctx) })
	run(func() { s.mesh.run(ctx) })
	run(func() { s.jwks.Run(ctx) })
	if s.kube != nil {
		run(func() { s.kube.clients.Queue.Run(ctx) })
		run(func() { s.kube.registry.Run(ctx) })
		run(func() { s.kube.secrets.Run(ctx) })
		run(func() { s.kube.authz.Run(ctx) })
		if s.kube.status != nil {
			run(func() {
				if err := s.kube.status.Run(statusCtx); err != nil {
					log.Error("ingress status writer stopped", "err", err)
				}
			})
		}
		if s.kube.gatewayDeployer != nil {
			run(func() { s.kube.gatewayDeployer.Run(ctx) })
		}
		if s.kube.istioStatus != nil {
			run(func() {
				if err := s.kube.istioStatus.Run(statusCtx); err != nil {
					log.Error("istio status writer stopped", "err", err)
				}
			})
		}
	}
	run(func() { s.discovery.Run(ctx) })
	for _, g := range []struct {
		name string
		srv  *grpc.Server
		l    net.Listener
	}{{"gRPC", s.grpc, s.grpcListener}, {"secure gRPC", s.secure, s.secureListener}} {
		if g.srv == nil {
			continue
		}
		run(func() {
			if err := g.srv.Serve(g.l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errc <- fmt.Errorf("%s server: %w", g.name, err)
			}
		})
	}
	if s.sec.keyPair != nil {
		run(func() { s.sec.keyPair.Run(ctx, s.opts.Security.TLSReloadInterval) })
	}
	run(func() {
		if err := s.http.Serve(s.httpListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("HTTP server: %w", err)
		}
	})
	addrs := []any{"http", s.HTTPAddr().String()}
	if a := s.GRPCAddr(); a != nil {
		addrs = append(addrs, "grpc", a.String())
	} else {
		log.Info("plaintext ADS port off (Kubernetes mode): give --grpc-addr to serve it")
	}
	if a := s.SecureGRPCAddr(); a != nil {
		addrs = append(addrs, "secureGrpc", a.String())
	}
	if s.kube != nil {
		log.Info("serving", append(addrs, "mode", "kubernetes",
			"apiServer", s.kube.clients.RESTConfig.Host, "namespaces", s.kube.clients.Namespaces)...)
	} else {
		log.Info("serving", append(addrs, "configDir", s.opts.ConfigDir)...)
	}
	run(func() { s.waitSynced(ctx) })

	var err error
	select {
	case <-stop.Done():
	case err = <-errc:
	}
	log.Info("shutting down")
	stopStatus()
	if err == nil {
		s.drain()
	}
	cancel()
	s.shutdown()
	wg.Wait()
	if s.kube != nil {
		s.kube.broadcaster.Shutdown()
	}
	log.Info("stopped")
	return err
}

// waitSynced tells the discovery server once the config source has
// delivered its first full load, so no proxy is ever sent empty config.
func (s *Server) waitSynced(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !s.synced() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	s.discovery.Synced()
	select {
	case <-s.discovery.FirstPushDone():
		close(s.ready)
		s.opts.Logger.Info("config synced and first push computed")
	case <-ctx.Done():
	}
}

// synced reports whether every config source and registry has delivered
// its first full load.
func (s *Server) synced() bool {
	if !s.store.HasSynced() || !s.mesh.hasSynced() {
		return false
	}
	return s.kube == nil || (s.kube.registry.HasSynced() && s.kube.secrets.HasSynced())
}

// Store is the config store the push context reads (for tests and
// debugging).
func (s *Server) Store() model.ConfigStoreController { return s.store }

// ServiceRegistry is the Kubernetes service registry, nil in file mode.
func (s *Server) ServiceRegistry() model.ServiceDiscovery {
	if s.kube == nil {
		return nil
	}
	return s.kube.registry
}

// shutdown stops both servers. ADS streams end when the discovery server's
// context is cancelled; GracefulStop then waits for them, bounded by
// ShutdownGrace, after which remaining connections are closed hard.
func (s *Server) shutdown() {
	var servers []*grpc.Server
	for _, g := range []*grpc.Server{s.grpc, s.secure} {
		if g != nil {
			servers = append(servers, g)
		}
	}
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, g := range servers {
			wg.Go(g.GracefulStop)
		}
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(s.opts.ShutdownGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		for _, g := range servers {
			g.Stop()
		}
		<-done
	}
	if s.drained != nil {
		s.drained.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
	defer cancel()
	_ = s.http.Shutdown(ctx)
}
