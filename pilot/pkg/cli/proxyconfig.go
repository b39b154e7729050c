package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
)

// ConfigOptions configure proxy-config.
type ConfigOptions struct {
	// Type is listeners, routes, clusters, endpoints or secrets.
	Type string
	// Proxy is a node id, "POD.NAMESPACE" or a pod name unique among the
	// connected proxies.
	Proxy string
	// Output is "" for a table, or json or yaml for the raw section of the
	// config dump.
	Output string
	// WithoutEnvoyFilters shows the config as translated, before the
	// EnvoyFilters that apply to the proxy patch it.
	WithoutEnvoyFilters bool
}

// ConfigTypes are the sections proxy-config shows.
var ConfigTypes = []string{"listeners", "routes", "clusters", "endpoints", "secrets"}

// ResolveProxy finds the replica serving proxy and its node id. A name
// matching several connected proxies is an error listing them.
func ResolveProxy(ctx context.Context, clients []*Client, proxy string) (*Client, string, error) {
	type match struct {
		c  *Client
		id string
	}
	var exact, loose []match
	for _, c := range clients {
		var az debugapi.Adsz
		if err := c.Get(ctx, "/debug/adsz", &az); err != nil {
			return nil, "", err
		}
		for _, p := range az.Proxies {
			switch proxy {
			case p.ID:
				exact = append(exact, match{c, p.ID})
			case p.Pod + "." + p.Namespace, p.Pod:
				loose = append(loose, match{c, p.ID})
			}
		}
	}
	if len(exact) > 0 {
		// Several replicas may hold a stream for one node id while it
		// moves; the first one asked serves.
		return exact[0].c, exact[0].id, nil
	}
	ids := map[string]bool{}
	for _, m := range loose {
		ids[m.id] = true
	}
	switch len(ids) {
	case 0:
		return nil, "", fmt.Errorf("proxy %q is not connected (wayfinder proxy-status lists the connected ones)", proxy)
	case 1:
		return loose[0].c, loose[0].id, nil
	}
	var names []string
	for id := range ids {
		names = append(names, id)
	}
	return nil, "", fmt.Errorf("proxy %q matches several proxies; give the node id: %s", proxy, strings.Join(names, ", "))
}

// FetchConfigDump reads the config dump of node id from c; without
// EnvoyFilters, the config as translated before they patch it.
func FetchConfigDump(ctx context.Context, c *Client, id string, withoutEnvoyFilters bool) (*admin.ConfigDump, error) {
	path := "/debug/config_dump?proxyID=" + url.QueryEscape(id)
	if withoutEnvoyFilters {
		path += "&withoutEnvoyFilters=true"
	}
	body, err := c.GetRaw(ctx, path)
	if err != nil {
		return nil, err
	}
	dump := &admin.ConfigDump{}
	if err := protojson.Unmarshal(body, dump); err != nil {
		return nil, fmt.Errorf("decoding config dump of %s: %w", id, err)
	}
	return dump, nil
}

// section returns the part of dump holding typ, or an empty one.
func section(dump *admin.ConfigDump, typ string) (proto.Message, error) {
	var m proto.Message
	switch typ {
	case "listeners":
		m = &admin.ListenersConfigDump{}
	case "routes":
		m = &admin.RoutesConfigDump{}
	case "clusters":
		m = &admin.ClustersConfigDump{}
	case "endpoints":
		m = &admin.EndpointsConfigDump{}
	case "secrets":
		m = &admin.SecretsConfigDump{}
	default:
		return nil, fmt.Errorf("unknown config type %q: want one of %s", typ, strings.Join(ConfigTypes, ", "))
	}
	for _, a := range dump.GetConfigs() {
		if a.MessageIs(m) {
			if err := a.UnmarshalTo(m); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", typ, err)
			}
			break
		}
	}
	if s, ok := m.(*admin.SecretsConfigDump); ok {
		redactSecrets(s)
	}
	return m, nil
}

// redactSecrets drops key material, should a server ever include it: the
// tool prints names and versions only.
func redactSecrets(s *admin.SecretsConfigDump) {
	for _, d := range s.GetDynamicActiveSecrets() {
		d.Secret = nil
	}
	for _, d := range s.GetDynamicWarmingSecrets() {
		d.Secret = nil
	}
	for _, d := range s.GetStaticSecrets() {
		d.Secret = nil
	}
}

// WriteConfig renders one section of dump as a table, or raw as JSON or
// YAML.
func WriteConfig(w io.Writer, dump *admin.ConfigDump, opts ConfigOptions) error {
	if err := checkOutput(opts.Output); err != nil {
		return err
	}
	m, err := section(dump, opts.Type)
	if err != nil {
		return err
	}
	if opts.Output == OutputJSON || opts.Output == OutputYAML {
		js, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
		if err != nil {
			return err
		}
		return writeJSONAs(w, js, opts.Output)
	}
	var header []string
	var rows [][]string
	switch s := m.(type) {
	case *admin.ListenersConfigDump:
		header, rows, err = listenerRows(s)
	case *admin.RoutesConfigDump:
		header, rows, err = routeRows(s)
	case *admin.ClustersConfigDump:
		header, rows, err = clusterRows(s)
	case *admin.EndpointsConfigDump:
		header, rows, err = endpointRows(s)
	case *admin.SecretsConfigDump:
		header, rows = secretRows(s)
	}
	if err != nil {
		return err
	}
	return writeTable(w, header, rows)
}
