package xds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Configz is the body of /debug/configz.
type Configz struct {
	// Configs are every object in the store, by kind (schema order), then
	// namespace and name.
	Configs []ConfigzObject `json:"configs"`
	// Errors are the config problems standing now.
	Errors []ConfigzError `json:"errors"`
	// SecretRefusals are the secrets connected proxies are not sent
	// (another namespace's, or over the plaintext port), by gateway group.
	SecretRefusals []SecretRefusalz `json:"secretRefusals"`
	// Status is, per object used by a gateway or with a problem, what is
	// written to its status in Kubernetes mode (see object_status.go).
	Status []ConfigzStatus `json:"status"`
	// GatewayAPI is the status of the Gateway API objects handled (see
	// debug_gatewayapi.go); absent when the Gateway API is off.
	GatewayAPI *GatewayAPIz `json:"gatewayAPI,omitempty"`
}

// ConfigzObject is one config object.
type ConfigzObject struct {
	Kind            string            `json:"kind"`
	Namespace       string            `json:"namespace"`
	Name            string            `json:"name"`
	Source          string            `json:"source,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	// Spec is the object's spec in protojson form.
	Spec json.RawMessage `json:"spec"`
}

// ConfigzError is one config problem. Origin is "source" (a file or
// object the source rejected) or "translation".
type ConfigzError struct {
	Origin    string `json:"origin"`
	Source    string `json:"source,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Field     string `json:"field,omitempty"`
	Message   string `json:"message"`
	Warning   bool   `json:"warning,omitempty"`
}

func (s *DiscoveryServer) handleConfigz(w http.ResponseWriter, _ *http.Request) {
	out := Configz{Configs: []ConfigzObject{}, Errors: []ConfigzError{}}
	for _, kind := range schema.Kinds() {
		for _, c := range s.store.List(kind, "") {
			spec, err := specJSON(c.Spec)
			if err != nil {
				writeError(w, http.StatusInternalServerError, fmt.Sprintf("%s: encoding spec: %v", c.Key(), err))
				return
			}
			out.Configs = append(out.Configs, ConfigzObject{
				Kind: kind.String(), Namespace: c.Namespace, Name: c.Name, Source: c.Source,
				ResourceVersion: c.ResourceVersion, Labels: c.Labels, Spec: spec,
			})
		}
	}
	src, tr := s.currentErrors()
	for _, e := range src {
		out.Errors = append(out.Errors, configzError("source", e))
	}
	for _, e := range tr {
		out.Errors = append(out.Errors, configzError("translation", e))
	}
	out.SecretRefusals = s.secretRefusals()
	out.Status = s.configzStatus()
	out.GatewayAPI = s.gatewayAPIz()
	writeJSON(w, http.StatusOK, out)
}

func configzError(origin string, e *config.Error) ConfigzError {
	out := ConfigzError{Origin: origin, Source: e.Source, Field: e.Field, Message: e.Message, Warning: e.Warning,
		Namespace: e.Key.Namespace, Name: e.Key.Name}
	if e.Key.Kind != 0 {
		out.Kind = e.Key.Kind.String()
	}
	return out
}

// specJSON renders a spec with protojson, compacted: protojson varies its
// whitespace on purpose, and the debug output must be stable.
func specJSON(m proto.Message) (json.RawMessage, error) {
	if m == nil {
		return json.RawMessage("null"), nil
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// handleConfigDump serves the view a proxy is being served, in Envoy's
// admin ConfigDump form (what Envoy's /config_dump shows), as protojson.
func (s *DiscoveryServer) handleConfigDump(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("proxyID")
	if id == "" {
		writeError(w, http.StatusBadRequest, "missing query parameter proxyID (a connected proxy's node id; see /debug/adsz)")
		return
	}
	s.mu.Lock()
	p := s.proxies[id]
	var v *view
	if p != nil {
		v = p.view // immutable once set; safe to read after unlock
	}
	s.mu.Unlock()
	switch {
	case p == nil:
		writeError(w, http.StatusNotFound, fmt.Sprintf("proxy %q is not connected (see /debug/adsz)", id))
		return
	case !security.ViewerFrom(r.Context()).SeesNamespace(p.proxy.Namespace):
		// p.proxy is immutable once connected.
		writeError(w, http.StatusForbidden, fmt.Sprintf("proxy %q is in namespace %q: %s sees only its own namespace's proxies",
			id, p.proxy.Namespace, security.ViewerFrom(r.Context()).Identity.String()))
		return
	case v == nil:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("proxy %q has no config yet: waiting for config sync and the first push", id))
		return
	}
	dump, err := configDump(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("building config dump for %q: %v", id, err))
		return
	}
	b, err := protojson.Marshal(dump)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("encoding config dump for %q: %v", id, err))
		return
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	buf.WriteByte('\n')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// configDump renders a view as Envoy's ConfigDump: clusters, endpoints,
// listeners and routes, each sorted by name, all dynamic (from xDS), from
// the resources' shared encodings. Secrets, when the view has any, are
// shown as Envoy's admin shows them: private keys "[redacted]".
func configDump(v *view) (*admin.ConfigDump, error) {
	cds := &admin.ClustersConfigDump{VersionInfo: v.sets[cdsIdx].version}
	for _, r := range v.sets[cdsIdx].items {
		cds.DynamicActiveClusters = append(cds.DynamicActiveClusters, &admin.ClustersConfigDump_DynamicCluster{VersionInfo: cds.VersionInfo, Cluster: r.any})
	}
	eds := &admin.EndpointsConfigDump{}
	for _, r := range v.sets[edsIdx].items {
		eds.DynamicEndpointConfigs = append(eds.DynamicEndpointConfigs, &admin.EndpointsConfigDump_DynamicEndpointConfig{VersionInfo: v.sets[edsIdx].version, EndpointConfig: r.any})
	}
	lds := &admin.ListenersConfigDump{VersionInfo: v.sets[ldsIdx].version}
	for _, r := range v.sets[ldsIdx].items {
		lds.DynamicListeners = append(lds.DynamicListeners, &admin.ListenersConfigDump_DynamicListener{
			Name: r.name, ActiveState: &admin.ListenersConfigDump_DynamicListenerState{VersionInfo: lds.VersionInfo, Listener: r.any},
		})
	}
	rds := &admin.RoutesConfigDump{}
	for _, r := range v.sets[rdsIdx].items {
		rds.DynamicRouteConfigs = append(rds.DynamicRouteConfigs, &admin.RoutesConfigDump_DynamicRouteConfig{VersionInfo: v.sets[rdsIdx].version, RouteConfig: r.any})
	}
	sections := []proto.Message{cds, eds, lds, rds}
	if secrets := v.sets[sdsIdx]; len(secrets.items) > 0 {
		sds, err := secretsDump(secrets)
		if err != nil {
			return nil, err
		}
		sections = append(sections, sds)
	}
	dump := &admin.ConfigDump{}
	for _, m := range sections {
		a, err := anypb.New(m)
		if err != nil {
			return nil, err
		}
		dump.Configs = append(dump.Configs, a)
	}
	return dump, nil
}
