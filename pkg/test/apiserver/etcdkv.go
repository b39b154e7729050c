package apiserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The API server keeps objects in etcd under /registry/GROUP/RESOURCE/
// NAMESPACE/NAME (core kinds without the group); custom resources are
// stored as JSON. Tests of faults use direct access to make changes the
// control plane could not have watched (written while the API server is
// down) and to compact etcd past the resourceVersions it holds, so that
// resuming a watch fails with 410 Gone.

// EtcdKey is the etcd key of a namespaced object of group and resource
// ("networking.istio.io", "virtualservices").
func EtcdKey(group, resource, namespace, name string) string {
	if group == "" {
		return fmt.Sprintf("/registry/%s/%s/%s", resource, namespace, name)
	}
	return fmt.Sprintf("/registry/%s/%s/%s/%s", group, resource, namespace, name)
}

// EtcdGet returns the value stored at key and etcd's current revision; a
// missing key is an error.
func (c *Cluster) EtcdGet(t testing.TB, key string) ([]byte, int64) {
	t.Helper()
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	c.etcdCall(t, "/v3/kv/range", map[string]any{"key": b64(key)}, &out)
	if len(out.KVs) == 0 {
		t.Fatalf("etcd has no key %s", key)
	}
	v, err := base64.StdEncoding.DecodeString(out.KVs[0].Value)
	if err != nil {
		t.Fatalf("etcd value of %s: %v", key, err)
	}
	return v, revision(t, out.Header.Revision)
}

// EtcdPut stores value at key and returns the new revision.
func (c *Cluster) EtcdPut(t testing.TB, key string, value []byte) int64 {
	t.Helper()
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	c.etcdCall(t, "/v3/kv/put", map[string]any{"key": b64(key), "value": base64.StdEncoding.EncodeToString(value)}, &out)
	return revision(t, out.Header.Revision)
}

// EtcdCompact compacts etcd's history up to rev (physically, waiting for
// it), so no watch can start at an earlier revision.
func (c *Cluster) EtcdCompact(t testing.TB, rev int64) {
	t.Helper()
	c.etcdCall(t, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
}

func (c *Cluster) etcdCall(t testing.TB, path string, body map[string]any, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcd.clientURL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: HTTP %d: %s", path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("etcd %s: decoding %s: %v", path, data, err)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func revision(t testing.TB, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("etcd revision %q: %v", s, err)
	}
	return n
}
