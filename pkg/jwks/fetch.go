package jwks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// HTTPClientOptions configure NewHTTPClient.
type HTTPClientOptions struct {
	// RootCAs verify https servers; nil means the system pool (istiod adds
	// /cacerts/extra.pem to it; pass a pool for that).
	RootCAs *x509.CertPool
	// BlockedPrefixes are refused at dial time in addition to link-local
	// and known cloud-metadata addresses (istiod's BLOCKED_CIDRS_IN_JWKS_URIS).
	BlockedPrefixes []netip.Prefix
}

// NewHTTPClient returns the client istiod's resolver uses: proxy from the
// environment, no keep-alives (fetches are rare), TLS 1.2 or later, and
// addresses checked after DNS resolution, so neither a hostname nor a
// redirect can reach a blocked address.
func NewHTTPClient(o HTTPClientOptions) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second}
	dialer.Control = func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("unable to parse IP from resolved address %s", address)
		}
		return blocked(ip.Unmap(), o.BlockedPrefixes)
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DisableKeepAlives: true,
		DialContext:       dialer.DialContext,
		TLSClientConfig:   &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
	}}
}

// cloudMetadata are metadata addresses outside link-local (istiod's
// knownCloudMetadataRanges): Alibaba Cloud's and AWS's IPv6 IMDS.
var cloudMetadata = []netip.Prefix{
	netip.MustParsePrefix("100.100.100.200/32"),
	netip.MustParsePrefix("fd00:ec2::/32"),
}

func blocked(ip netip.Addr, extra []netip.Prefix) error {
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
		return fmt.Errorf("connection blocked: resolved IP %s is link-local", ip)
	}
	for _, p := range cloudMetadata {
		if p.Contains(ip) {
			return fmt.Errorf("connection blocked: resolved IP %s is a known cloud metadata address", ip)
		}
	}
	for _, p := range extra {
		if p.Contains(ip) {
			return fmt.Errorf("connection blocked: resolved IP %s is in blocked range %s", ip, p)
		}
	}
	return nil
}

// ErrTooLarge is returned (wrapped) for a body over MaxResponseBytes.
var ErrTooLarge = errors.New("response too large")

// get fetches uri once, bounded by timeout and MaxResponseBytes, and
// counts the attempt as istiod does.
func (r *Resolver) get(ctx context.Context, uri string, timeout time.Duration) ([]byte, error) {
	body, err := r.getOnce(ctx, uri, timeout)
	if err != nil {
		r.fetchFail.Inc()
	} else {
		r.fetchOK.Inc()
	}
	return body, err
}

func (r *Resolver) getOnce(ctx context.Context, uri string, timeout time.Duration) ([]byte, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("URI scheme %q is not supported", u.Scheme)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	limit := r.opts.MaxResponseBytes
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, uri, resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: %s is over the limit of %d bytes", ErrTooLarge, uri, limit)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		msg := strconv.Quote(string(body))
		if len(msg) > 100 {
			msg = msg[:100] + "(truncated)"
		}
		return nil, fmt.Errorf("GET %s: status %d, message %s", uri, resp.StatusCode, msg)
	}
	return body, nil
}

func jwksURIFromDiscovery(from string, body []byte) (string, error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("OpenID configuration %s: %w", from, err)
	}
	uri, ok := doc["jwks_uri"].(string)
	if !ok {
		return "", fmt.Errorf("invalid jwks_uri %v in OpenID configuration %s", doc["jwks_uri"], from)
	}
	return uri, nil
}

// ValidateFormat reports an error unless body looks like a JWKS: a JSON
// object with a "keys" array (istiod's validateJWKSFormat; individual keys
// are not checked).
func ValidateFormat(body []byte) error {
	var doc struct {
		Keys *json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if doc.Keys == nil {
		return errors.New(`missing "keys" field`)
	}
	var keys []json.RawMessage
	if err := json.Unmarshal(*doc.Keys, &keys); err != nil {
		return fmt.Errorf(`"keys" is not an array: %w`, err)
	}
	return nil
}

// Differ reports whether two key sets differ as istiod's
// compareJWKSResponse decides: equal strings never differ; otherwise the
// "keys" arrays are compared after sorting by kid, and anything that
// cannot be compared that way differs.
func Differ(oldSet, newSet string) bool {
	if oldSet == newSet {
		return false
	}
	var o, n map[string]any
	if json.Unmarshal([]byte(newSet), &n) != nil || json.Unmarshal([]byte(oldSet), &o) != nil {
		return true
	}
	ok, oOK := o["keys"].([]any)
	nk, nOK := n["keys"].([]any)
	if !oOK || !nOK {
		return true
	}
	sortKeys(ok)
	sortKeys(nk)
	return !reflect.DeepEqual(ok, nk)
}

func sortKeys(keys []any) {
	kid := func(k any) (string, bool) {
		m, _ := k.(map[string]any)
		s, ok := m["kid"].(string)
		return s, ok
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, aok := kid(keys[i])
		b, bok := kid(keys[j])
		if aok && bok {
			return a < b
		}
		mi, _ := keys[i].(map[string]any)
		mj, _ := keys[j].(map[string]any)
		return len(mi) < len(mj)
	})
}
