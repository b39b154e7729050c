package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// etcd is a single-member etcd on loopback with its data in dir.
type etcd struct {
	proc      *process
	clientURL string
}

func startEtcd(ctx context.Context, binary, dir string) (*etcd, error) {
	var lastErr error
	for range 3 {
		e, err := startEtcdOnce(ctx, binary, dir)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !isBindError(err) {
			break
		}
	}
	return nil, lastErr
}

func startEtcdOnce(ctx context.Context, binary, dir string) (*etcd, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	logPath := filepath.Join(dir, "etcd.log")
	p, err := startProcess("etcd", logPath, binary,
		"--name=wayfinder-test",
		"--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=wayfinder-test="+peer,
		"--initial-cluster-state=new",
		// Test data is thrown away: no need for etcd's large default
		// snapshot interval or a metrics listener.
		"--snapshot-count=10000",
		"--log-level=warn",
		"--logger=zap",
	)
	if err != nil {
		return nil, err
	}
	e := &etcd{proc: p, clientURL: client}
	if err := waitHTTP(ctx, p, client+"/health", "", func(code int, body string) bool {
		return code == http.StatusOK && strings.Contains(body, `"health":"true"`)
	}); err != nil {
		p.stop(5 * time.Second)
		if logMentionsBindFailure(logPath) {
			return nil, fmt.Errorf("%w: %v", errBind, err)
		}
		return nil, err
	}
	return e, nil
}

func (e *etcd) stop() {
	if e != nil {
		e.proc.stop(10 * time.Second)
	}
}

// waitHTTP polls url until ok accepts the answer, the process exits, or ctx
// ends. Polling is the only way to learn that a server is up; the interval
// is short and the wait bounded by ctx.
func waitHTTP(ctx context.Context, p *process, url, bearer string, ok func(code int, body string) bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := insecureHTTP.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if ok(resp.StatusCode, string(body)) {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w (last answer: %s); last lines of %s:\n%s",
				p.name, url, ctx.Err(), last, p.log, tail(p.log, 25))
		case <-tick.C:
		}
	}
}

func isBindError(err error) bool {
	return err != nil && strings.Contains(err.Error(), errBind.Error())
}
