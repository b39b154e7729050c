package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
)

// ClientOptions say how to reach the debug endpoints of one or more
// replicas.
type ClientOptions struct {
	// Addrs are host:port (or http(s):// URLs) of the debug servers, one
	// per replica; empty means 127.0.0.1:15014.
	Addrs []string
	// TokenFile holds a bearer token sent as "Authorization: Bearer
	// TOKEN", which the debug endpoints require in Kubernetes mode. It is
	// read for every request, so a projected token that rotates keeps
	// working.
	TokenFile string
	// Timeout bounds each request; zero means 30 seconds.
	Timeout time.Duration
	// HTTPClient, when set, replaces the default client (tests, TLS).
	HTTPClient *http.Client
}

// Client reads one replica's debug endpoints.
type Client struct {
	base      string
	tokenFile string
	http      *http.Client
}

// maxBody bounds a debug response the tool reads: a config dump of a large
// gateway is megabytes, not gigabytes.
const maxBody = 512 << 20

// NewClients returns a client per address in opts.
func NewClients(opts ClientOptions) ([]*Client, error) {
	addrs := opts.Addrs
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:15014"}
	}
	hc := opts.HTTPClient
	if hc == nil {
		t := opts.Timeout
		if t == 0 {
			t = 30 * time.Second
		}
		hc = &http.Client{Timeout: t}
	}
	var out []*Client
	for _, a := range addrs {
		base := a
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("--debug-addr %q: want host:port or an http(s) URL", a)
		}
		base = strings.TrimRight(base, "/")
		out = append(out, &Client{base: base, tokenFile: opts.TokenFile, http: hc})
	}
	return out, nil
}

// Addr is the replica's base URL, used to name it when it has no pod name.
func (c *Client) Addr() string { return c.base }

// Get fetches path and decodes its JSON body into out. A non-2xx answer
// becomes an error carrying the server's message.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	body, err := c.GetRaw(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s%s: decoding answer: %w", c.base, path, err)
	}
	return nil
}

// GetRaw fetches path and returns its body.
func (c *Client) GetRaw(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	if c.tokenFile != "" {
		tok, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		if t := strings.TrimSpace(string(tok)); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching the debug server (is --debug-addr right?): %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s%s: reading answer: %w", c.base, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var de debugapi.Error
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &de) == nil && de.Error != "" {
			msg = de.Error
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			msg += " (give a token with --token-file)"
		}
		return nil, fmt.Errorf("%s%s: %s: %s", c.base, path, resp.Status, msg)
	}
	return body, nil
}

// ErrFindings is returned when a command ran but found errors to report
// (analyze): the command exits 1 without printing it again.
var ErrFindings = errors.New("errors found")
