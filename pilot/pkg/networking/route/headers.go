package route

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	networking "istio.io/api/networking/v1alpha3"
)

// headerOps is the Envoy form of an Istio Headers block.
type headerOps struct {
	requestAdd     []*corev3.HeaderValueOption
	requestRemove  []string
	responseAdd    []*corev3.HeaderValueOption
	responseRemove []string
	// authority is a Host/:authority value set or added on the request:
	// Envoy cannot edit that header directly, so it becomes a host rewrite.
	authority string
}

// isAuthorityHeader reports whether name is the request's host.
func isAuthorityHeader(name string) bool {
	return strings.EqualFold(name, headerAuthority) || strings.EqualFold(name, "host")
}

// isInternalHeader reports headers Envoy refuses to add or remove:
// pseudo-headers and Host.
func isInternalHeader(name string) bool {
	return strings.HasPrefix(name, ":") || strings.EqualFold(name, "host")
}

// translateHeaders converts in. set overwrites (or adds), add appends;
// both are ordered by name, sets first.
func translateHeaders(in *networking.Headers, field string, p *problems) headerOps {
	var out headerOps
	req, resp := in.GetRequest(), in.GetResponse()
	var setAuth, addAuth string
	out.requestAdd, setAuth = headerValues(req.GetSet(), corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD, field+".request.set", p)
	var add []*corev3.HeaderValueOption
	add, addAuth = headerValues(req.GetAdd(), corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD, field+".request.add", p)
	out.requestAdd = append(out.requestAdd, add...)
	out.authority = setAuth
	if out.authority == "" {
		out.authority = addAuth
	}
	out.requestRemove = removable(req.GetRemove(), field+".request.remove", p)

	out.responseAdd, _ = headerValues(resp.GetSet(), corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD, field+".response.set", p)
	add, _ = headerValues(resp.GetAdd(), corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD, field+".response.add", p)
	out.responseAdd = append(out.responseAdd, add...)
	out.responseRemove = removable(resp.GetRemove(), field+".response.remove", p)
	return out
}

// headerValues turns a name->value map into header options sorted by name,
// returning any authority value separately.
func headerValues(m map[string]string, action corev3.HeaderValueOption_HeaderAppendAction, field string, p *problems) ([]*corev3.HeaderValueOption, string) {
	var out []*corev3.HeaderValueOption
	authority := ""
	request := strings.Contains(field, ".request.")
	for _, name := range sortedKeys(m) {
		if request && isAuthorityHeader(name) {
			authority = m[name]
			continue
		}
		if isInternalHeader(name) {
			p.warnf(field+"["+name+"]", "pseudo-header %s cannot be modified; ignored", name)
			continue
		}
		if !isToken(name) {
			p.errorf(field+"["+name+"]", "%q is not a valid HTTP header name", name)
			continue
		}
		out = append(out, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: name, Value: m[name]},
			AppendAction: action,
		})
	}
	return out, authority
}

// removable drops the headers Envoy refuses to remove.
func removable(names []string, field string, p *problems) []string {
	var out []string
	for _, name := range names {
		if isInternalHeader(name) {
			p.warnf(field, "header %s cannot be removed; ignored", name)
			continue
		}
		if !isToken(name) {
			p.errorf(field, "%q is not a valid HTTP header name", name)
			continue
		}
		out = append(out, name)
	}
	return out
}
