package ingress

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// objects decodes YAML documents into Ingresses, IngressClasses and Services.
func objects(t *testing.T, docs string) ([]*networkingv1.Ingress, []*networkingv1.IngressClass, map[string]*corev1.Service) {
	t.Helper()
	var ings []*networkingv1.Ingress
	var classes []*networkingv1.IngressClass
	svcs := map[string]*corev1.Service{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(docs, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch meta.Kind {
		case "Ingress":
			ing := &networkingv1.Ingress{}
			ings, obj = append(ings, ing), ing
		case "IngressClass":
			c := &networkingv1.IngressClass{}
			classes, obj = append(classes, c), c
		case "Service":
			obj = &corev1.Service{}
		default:
			t.Fatalf("kind %q", meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatal(err)
		}
		if s, ok := obj.(*corev1.Service); ok {
			svcs[s.Namespace+"/"+s.Name] = s
		}
	}
	return ings, classes, svcs
}

func lookup(svcs map[string]*corev1.Service) func(ns, name string) *corev1.Service {
	return func(ns, name string) *corev1.Service { return svcs[ns+"/"+name] }
}

func TestHandled(t *testing.T) {
	classes := `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ours}
spec: {controller: wayfinder.io/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
`
	defaultOurs := `
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: default-ours, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
spec: {controller: wayfinder.io/ingress-controller}
`
	defaultOther := `
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: default-nginx, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
spec: {controller: k8s.io/ingress-nginx}
`
	cases := []struct {
		name    string
		meta    string
		spec    string
		classes string
		opt     string
		want    bool
	}{
		{"annotation matches", `annotations: {kubernetes.io/ingress.class: wayfinder}`, ``, classes, "wayfinder", true},
		{"annotation for another", `annotations: {kubernetes.io/ingress.class: nginx}`, ``, classes, "wayfinder", false},
		{"annotation wins over class", `annotations: {kubernetes.io/ingress.class: nginx}`, `ingressClassName: ours`, classes, "wayfinder", false},
		{"annotation without --ingress-class", `annotations: {kubernetes.io/ingress.class: ""}`, ``, classes, "", false},
		{"our class", ``, `ingressClassName: ours`, classes, "", true},
		{"another class", ``, `ingressClassName: nginx`, classes, "", false},
		{"unknown class", ``, `ingressClassName: gone`, classes, "", false},
		{"default class is ours", ``, ``, classes + defaultOurs, "", true},
		{"default class is another", ``, ``, classes + defaultOther, "", false},
		{"no class anywhere", ``, ``, classes, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ings, cls, _ := objects(t, fmt.Sprintf("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: d, %s}\nspec: {%s}\n---\n%s", tc.meta, tc.spec, tc.classes))
			if got := Handled(ings[0], cls, Options{IngressClass: tc.opt}); got != tc.want {
				t.Errorf("Handled = %v, want %v", got, tc.want)
			}
			cfgs, _ := Convert(ings, cls, Options{IngressClass: tc.opt})
			if (len(cfgs) > 0) != tc.want {
				t.Errorf("Convert produced %d configs; handled %v", len(cfgs), tc.want)
			}
		})
	}
}

// describe renders matches as "exact:/a|prefix:/a/" (or "*" for none).
func describe(ms []*networking.HTTPMatchRequest) string {
	if ms == nil {
		return "*"
	}
	var parts []string
	for _, m := range ms {
		switch u := m.GetUri().GetMatchType().(type) {
		case *networking.StringMatch_Exact:
			parts = append(parts, "exact:"+u.Exact)
		case *networking.StringMatch_Prefix:
			parts = append(parts, "prefix:"+u.Prefix)
		}
	}
	return strings.Join(parts, "|")
}

func TestConvertPath(t *testing.T) {
	exact, prefix, impl := networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific
	cases := []struct {
		typ     *networkingv1.PathType
		path    string
		want    string
		length  int
		isExact bool
		err     string
	}{
		{&exact, "/foo", "exact:/foo", 4, true, ""},
		{&exact, "/foo/", "exact:/foo/", 5, true, ""},
		{&prefix, "/foo", "exact:/foo|prefix:/foo/", 4, false, ""},
		{&prefix, "/foo/", "exact:/foo|prefix:/foo/", 4, false, ""},
		{&prefix, "/", "*", 1, false, ""},
		{&impl, "/foo", "exact:/foo", 4, true, ""},
		{nil, "/foo", "exact:/foo", 4, true, ""},
		{&impl, "/foo/*", "exact:/foo|prefix:/foo/", 4, false, ""},
		{&impl, "/foo.*", "exact:/foo|prefix:/foo/", 4, false, ""},
		{&impl, "/*", "*", 2, false, ""},
		{&impl, "", "*", 0, false, ""},
		{&exact, "foo", "", 0, false, `path "foo" must start with /`},
		{&prefix, "", "", 0, false, `path "" must start with /`},
	}
	for _, tc := range cases {
		typ := "<nil>"
		if tc.typ != nil {
			typ = string(*tc.typ)
		}
		t.Run(typ+" "+tc.path, func(t *testing.T) {
			m, err := convertPath(networkingv1.HTTPIngressPath{Path: tc.path, PathType: tc.typ})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(m.matches); got != tc.want || m.length != tc.length || m.exact != tc.isExact {
				t.Errorf("got %s (length %d exact %v), want %s (%d %v)", got, m.length, m.exact, tc.want, tc.length, tc.isExact)
			}
		})
	}
}

const twoIngresses = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: web, creationTimestamp: "2024-01-02T00:00:00Z"}
spec:
  ingressClassName: ours
  defaultBackend: {service: {name: fallback, port: {number: 8080}}}
  tls:
  - hosts: [shop.example.com]
    secretName: shop-cert
  - hosts: [other.example.com]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: front, port: {name: http}}}}
      - {path: /api/v2, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}
      - {path: /api, pathType: Exact, backend: {service: {name: api, port: {number: 80}}}}
      - {path: /missing, pathType: Prefix, backend: {service: {name: front, port: {name: grpc}}}}
      - {path: /bucket, pathType: Prefix, backend: {resource: {apiGroup: k8s.example.com, kind: Bucket, name: b}}}
  - host: blog.example.com
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: api, namespace: api, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  ingressClassName: ours
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 9090}}}}
  - http:
      paths:
      - {path: /healthz, pathType: Exact, backend: {service: {name: health, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ours}
spec: {controller: wayfinder.io/ingress-controller}
---
apiVersion: v1
kind: Service
metadata: {name: front, namespace: web}
spec:
  ports: [{name: http, port: 8000}]
`

func TestConvert(t *testing.T) {
	ings, classes, svcs := objects(t, twoIngresses)
	before := []networkingv1.Ingress{*ings[0].DeepCopy(), *ings[1].DeepCopy()}
	cfgs, errs := Convert(ings, classes, Options{Services: lookup(svcs)})
	if !reflect.DeepEqual(before, []networkingv1.Ingress{*ings[0], *ings[1]}) {
		t.Error("Convert modified its input")
	}

	var names []string
	byName := map[string]config.Config{}
	for _, c := range cfgs {
		names = append(names, c.Kind.String()+" "+c.Namespace+"/"+c.Name)
		byName[c.Namespace+"/"+c.Name] = c
		if err := validation.Validate(c); err != nil {
			t.Errorf("%s/%s is invalid: %v", c.Namespace, c.Name, err)
		}
	}
	want := []string{
		"Gateway api/api-istio-autogenerated-k8s-ingress",
		"Gateway web/shop-istio-autogenerated-k8s-ingress",
		"Gateway web/shop-istio-autogenerated-k8s-ingress-tls",
		"VirtualService api/shop-example-com-api-istio-autogenerated-k8s-ingress",
		"VirtualService api/wildcard-api-istio-autogenerated-k8s-ingress",
		"VirtualService web/blog-example-com-shop-istio-autogenerated-k8s-ingress",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("configs\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}

	gw := byName["web/shop-istio-autogenerated-k8s-ingress"]
	spec := gw.Spec.(*networking.Gateway)
	if gw.Source != "Ingress web/shop" || !reflect.DeepEqual(spec.GetSelector(), map[string]string{"istio": "ingressgateway"}) || len(spec.GetServers()) != 1 {
		t.Fatalf("gateway %v", gw)
	}
	tlsGW := byName["web/shop-istio-autogenerated-k8s-ingress-tls"].Spec.(*networking.Gateway)
	if len(tlsGW.GetServers()) != 1 || !reflect.DeepEqual(tlsGW.GetSelector(), map[string]string{"istio": "ingressgateway"}) {
		t.Fatalf("TLS gateway %v", tlsGW)
	}
	https, http := tlsGW.GetServers()[0], spec.GetServers()[0]
	if https.GetPort().GetNumber() != 443 || https.GetPort().GetProtocol() != "HTTPS" || https.GetPort().GetName() != "https-443-ingress-shop-web-0" ||
		!slices.Equal(https.GetHosts(), []string{"shop.example.com"}) ||
		https.GetTls().GetMode() != networking.ServerTLSSettings_SIMPLE || https.GetTls().GetCredentialName() != "kubernetes://web/shop-cert" {
		t.Errorf("https server %v", https)
	}
	if http.GetPort().GetNumber() != 80 || http.GetPort().GetName() != "http-80-ingress-shop-web" || !slices.Equal(http.GetHosts(), []string{"*"}) {
		t.Errorf("http server %v", http)
	}

	// shop.example.com: the older Ingress (api) owns the host; paths are
	// longest first, exact before prefix on a tie; the newer Ingress's
	// default backend is not added since "/" already catches everything.
	shop := byName["api/shop-example-com-api-istio-autogenerated-k8s-ingress"].Spec.(*networking.VirtualService)
	if !slices.Equal(shop.GetHosts(), []string{"shop.example.com"}) ||
		!slices.Equal(shop.GetGateways(), []string{"api/api-istio-autogenerated-k8s-ingress", "web/shop-istio-autogenerated-k8s-ingress", "web/shop-istio-autogenerated-k8s-ingress-tls"}) {
		t.Errorf("shop hosts %v gateways %v", shop.GetHosts(), shop.GetGateways())
	}
	type rt struct{ name, match, dest string }
	var got []rt
	for _, r := range shop.GetHttp() {
		d := r.GetRoute()[0].GetDestination()
		got = append(got, rt{r.GetName(), describe(r.GetMatch()), fmt.Sprintf("%s:%d", d.GetHost(), d.GetPort().GetNumber())})
	}
	wantRoutes := []rt{
		{"web/shop/rules/0/paths/1", "exact:/api/v2|prefix:/api/v2/", "api.web.svc.cluster.local:80"},
		{"web/shop/rules/0/paths/2", "exact:/api", "api.web.svc.cluster.local:80"},
		{"api/api/rules/0/paths/0", "exact:/api|prefix:/api/", "api.api.svc.cluster.local:9090"},
		{"web/shop/rules/0/paths/0", "*", "front.web.svc.cluster.local:8000"},
	}
	if !slices.Equal(got, wantRoutes) {
		t.Errorf("shop routes\n%v\nwant\n%v", got, wantRoutes)
	}

	// blog.example.com has no paths: only the default backend.
	blog := byName["web/blog-example-com-shop-istio-autogenerated-k8s-ingress"].Spec.(*networking.VirtualService)
	if len(blog.GetHttp()) != 1 || blog.GetHttp()[0].GetName() != "web/shop/defaultBackend" || blog.GetHttp()[0].GetMatch() != nil ||
		blog.GetHttp()[0].GetRoute()[0].GetDestination().GetHost() != "fallback.web.svc.cluster.local" {
		t.Errorf("blog %v", blog)
	}
	// "*": the host-less rule of api, then shop's default backend last.
	wild := byName["api/wildcard-api-istio-autogenerated-k8s-ingress"].Spec.(*networking.VirtualService)
	// The catch-all host binds only the HTTP Gateways, not the TLS one.
	if !slices.Equal(wild.GetHosts(), []string{"*"}) || len(wild.GetHttp()) != 2 ||
		!slices.Equal(wild.GetGateways(), []string{"api/api-istio-autogenerated-k8s-ingress", "web/shop-istio-autogenerated-k8s-ingress"}) ||
		wild.GetHttp()[0].GetName() != "api/api/rules/1/paths/0" || wild.GetHttp()[1].GetName() != "web/shop/defaultBackend" {
		t.Errorf("wildcard %v", wild)
	}

	var gotErrs []string
	for _, e := range errs {
		gotErrs = append(gotErrs, e.Error())
	}
	wantErrs := []string{
		"Ingress web/shop: spec.tls[1].secretName: is required to terminate TLS; TLS entry skipped",
		`Ingress web/shop: spec.rules[0].http.paths[3].backend.service.port.name: Service web/front has no port named "grpc" (or does not exist); skipped`,
		"Ingress web/shop: spec.rules[0].http.paths[4].backend: only service backends are supported (resource backends are not); skipped",
	}
	if !slices.Equal(gotErrs, wantErrs) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(gotErrs, "\n"), strings.Join(wantErrs, "\n"))
	}

	// The same input in another order converts the same.
	again, _ := Convert([]*networkingv1.Ingress{ings[1], ings[0]}, classes, Options{Services: lookup(svcs)})
	if !reflect.DeepEqual(names, configNames(again)) {
		t.Errorf("order changed the output: %v", configNames(again))
	}
}

func configNames(cs []config.Config) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind.String()+" "+c.Namespace+"/"+c.Name)
	}
	return out
}

func TestConvertOptionsAndEdgeCases(t *testing.T) {
	ings, classes, _ := objects(t, `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a, namespace: ns, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  defaultBackend: {service: {name: one, port: {number: 80}}}
  rules:
  - host: a-b.example.com
    http: {paths: [{path: /x, pathType: Exact, backend: {service: {name: x, port: {number: 80}}}}]}
  - host: a.b.example.com
    http: {paths: [{path: /bad, pathType: Exotic, backend: {service: {name: x, port: {number: 80}}}}, {path: /y, pathType: Exact, backend: {service: {name: yy, port: {}}}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, namespace: ns, creationTimestamp: "2024-01-02T00:00:00Z"}
spec:
  defaultBackend: {service: {name: two, port: {number: 80}}}
`)
	cfgs, errs := Convert(ings, classes, Options{GatewaySelector: map[string]string{"app": "edge"}, DomainSuffix: "corp.local"})
	got := configNames(cfgs)
	want := []string{
		"Gateway ns/a-istio-autogenerated-k8s-ingress",
		"Gateway ns/b-istio-autogenerated-k8s-ingress",
		"VirtualService ns/a-b-example-com-a-istio-autogenerated-k8s-ingress",
		// a.b.example.com reads the same once dots are dashes.
		"VirtualService ns/a-b-example-com-a-istio-autogenerated-k8s-ingress-" + "0f6f0a3c",
		"VirtualService ns/wildcard-a-istio-autogenerated-k8s-ingress",
	}
	// The hash suffix is content-derived; check the prefix and uniqueness.
	if len(got) != len(want) || got[3] == got[2] || !strings.HasPrefix(got[3], want[2]+"-") {
		t.Fatalf("configs %v", got)
	}
	got[3] = want[3]
	if !slices.Equal(got, want) {
		t.Errorf("configs %v", got)
	}
	for _, c := range cfgs {
		switch spec := c.Spec.(type) {
		case *networking.Gateway:
			if !reflect.DeepEqual(spec.GetSelector(), map[string]string{"app": "edge"}) {
				t.Errorf("selector %v", spec.GetSelector())
			}
		case *networking.VirtualService:
			last := spec.GetHttp()[len(spec.GetHttp())-1]
			// Ingress a is older: its default backend serves "*".
			if d := last.GetRoute()[0].GetDestination(); d.GetHost() != "one.ns.svc.corp.local" {
				t.Errorf("%s: last route to %s", c.Name, d.GetHost())
			}
		}
	}
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	wantFields := []string{"spec.rules[1].http.paths[0].path", "spec.rules[1].http.paths[1].backend.service.port", "spec.defaultBackend"}
	if !slices.Equal(fields, wantFields) {
		t.Errorf("error fields %v want %v: %v", fields, wantFields, errs)
	}
	if !errs[2].Warning || !strings.HasPrefix(errs[2].Error(), "Ingress ns/b: spec.defaultBackend: an older Ingress's defaultBackend") {
		t.Errorf("%v", errs[2])
	}
	if !strings.Contains(errs[0].Message, `pathType "Exotic"`) {
		t.Errorf("%v", errs[0])
	}
	if cfgs[0].Kind != schema.Gateway {
		t.Error("sorted by kind")
	}
}

// A TLS entry without hosts covers every host: its server joins the main
// Gateway (bound by the catch-all host too) and no TLS Gateway is made.
func TestTLSWithoutHosts(t *testing.T) {
	ings, classes, _ := objects(t, `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: all, namespace: ns}
spec:
  tls: [{secretName: everything}]
  defaultBackend: {service: {name: web, port: {number: 80}}}
`)
	cfgs, errs := Convert(ings, classes, Options{})
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	if got := configNames(cfgs); !slices.Equal(got, []string{"Gateway ns/all-istio-autogenerated-k8s-ingress", "VirtualService ns/wildcard-all-istio-autogenerated-k8s-ingress"}) {
		t.Fatalf("configs %v", got)
	}
	servers := cfgs[0].Spec.(*networking.Gateway).GetServers()
	if len(servers) != 2 || servers[0].GetPort().GetNumber() != 443 || !slices.Equal(servers[0].GetHosts(), []string{"*"}) ||
		servers[0].GetTls().GetCredentialName() != "kubernetes://ns/everything" || servers[1].GetPort().GetNumber() != 80 {
		t.Errorf("servers %v", servers)
	}
	if vs := cfgs[1].Spec.(*networking.VirtualService); !slices.Equal(vs.GetGateways(), []string{"ns/all-istio-autogenerated-k8s-ingress"}) || len(vs.GetHttp()) != 1 {
		t.Errorf("virtual service %v", vs)
	}
}
