package analysis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/crdclient"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	kuberegistry "github.com/wayfinder-dev/wayfinder/pilot/pkg/serviceregistry/kube"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// ClusterOptions say which cluster LoadCluster reads.
type ClusterOptions struct {
	RESTConfig *rest.Config
	// Namespaces limits what is read; empty means all.
	Namespaces []string
	// DomainSuffix ends Service hostnames; default cluster.local.
	DomainSuffix string
	// Timeout bounds the initial list; zero means a minute.
	Timeout time.Duration
}

// LoadCluster reads the Istio config, Services and EndpointSlices of a
// cluster with the server's own informers (only list and watch; it records
// no Events and writes nothing), and returns the good objects, the
// validation errors and the Services as a registry.
func LoadCluster(ctx context.Context, opts ClusterOptions) ([]config.Config, []*config.Error, model.ServiceDiscovery, error) {
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	if opts.DomainSuffix == "" {
		opts.DomainSuffix = model.DefaultDomainSuffix
	}
	cfg := rest.CopyConfig(opts.RESTConfig)
	cfg.UserAgent = "wayfinder-analyze"
	cs, err := kclient.New(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	crds, err := crdclient.New(crdclient.Options{Client: cs.Istio, Namespaces: opts.Namespaces, Logger: quiet})
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err := kuberegistry.New(kuberegistry.Options{Client: cs.Kube, Namespaces: opts.Namespaces, DomainSuffix: opts.DomainSuffix, Logger: quiet})
	if err != nil {
		return nil, nil, nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(2)
	go func() { defer wg.Done(); crds.Run(runCtx) }()
	go func() { defer wg.Done(); reg.Run(runCtx) }()

	deadline := time.NewTimer(opts.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !crds.HasSynced() || !reg.HasSynced() {
		select {
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		case <-deadline.C:
			return nil, nil, nil, fmt.Errorf("listing config from %s: not synced within %s", cfg.Host, opts.Timeout)
		case <-tick.C:
		}
	}
	var configs []config.Config
	for _, k := range schema.Kinds() {
		configs = append(configs, crds.List(k, "")...)
	}
	return configs, crds.ConfigErrors(), reg, nil
}
