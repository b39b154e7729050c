package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
)

// StatusOptions configure proxy-status.
type StatusOptions struct {
	// Output is "" for a table, or json or yaml.
	Output string
}

// ProxyStatus is one proxy as one replica serves it: the rows of
// proxy-status, and its JSON form.
type ProxyStatus struct {
	ID      string `json:"id"`
	Replica string `json:"replica"`
	// Types are the proxy's xDS types as /debug/syncz shows them, each
	// with Summary, the word the table shows.
	Types []TypeStatus `json:"types"`
}

// TypeStatus is one xDS type of one proxy.
type TypeStatus struct {
	debugapi.SyncType
	// Summary is SYNCED (the proxy ACKed the latest version), STALE (it
	// was sent a version it has not ACKed yet, or a newer one waits),
	// NACKED (it rejected the latest version) or NOT SENT.
	Summary string `json:"summary"`
}

// summary folds a type's protocol state into what an operator asks:
// has the proxy got the current config?
func summary(t debugapi.SyncType) string {
	switch {
	case t.Status == "NACKED":
		return "NACKED"
	case t.Status == "NOT_SENT":
		return "NOT SENT"
	case t.Status == "SENT" || t.Stale:
		return "STALE"
	default:
		return t.Status
	}
}

// CollectStatus reads /debug/syncz from every replica. A replica is named
// by its pod name (from /debug/version) or, without one, its address.
func CollectStatus(ctx context.Context, clients []*Client) ([]ProxyStatus, error) {
	var out []ProxyStatus
	for _, c := range clients {
		replica := c.Addr()
		var v debugapi.VersionInfo
		if err := c.Get(ctx, "/debug/version", &v); err == nil && v.Replica != "" {
			replica = v.Replica
		}
		var sz debugapi.Syncz
		if err := c.Get(ctx, "/debug/syncz", &sz); err != nil {
			return nil, err
		}
		for _, p := range sz.Proxies {
			ps := ProxyStatus{ID: p.ID, Replica: replica, Types: []TypeStatus{}}
			for _, t := range p.Types {
				ps.Types = append(ps.Types, TypeStatus{SyncType: t, Summary: summary(t)})
			}
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b ProxyStatus) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Replica, b.Replica))
	})
	return out, nil
}

// tableTypes are the columns of proxy-status, in ADS order; SDS shows only
// when some proxy has secrets.
var tableTypes = []string{"cds", "lds", "eds", "rds", "sds"}

// WriteStatus renders statuses as a table (one row per proxy and replica,
// one column per xDS type: "SYNCED (version)") or as JSON or YAML.
func WriteStatus(w io.Writer, statuses []ProxyStatus, opts StatusOptions) error {
	if err := checkOutput(opts.Output); err != nil {
		return err
	}
	if opts.Output == OutputJSON || opts.Output == OutputYAML {
		return writeStructured(w, statuses, opts.Output)
	}
	if len(statuses) == 0 {
		_, err := fmt.Fprintln(w, "No proxies connected.")
		return err
	}
	var cols []string
	for _, typ := range tableTypes {
		for _, s := range statuses {
			if slices.ContainsFunc(s.Types, func(t TypeStatus) bool { return t.Type == typ }) {
				cols = append(cols, typ)
				break
			}
		}
	}
	header := []string{"NAME"}
	for _, c := range cols {
		header = append(header, strings.ToUpper(c))
	}
	header = append(header, "REPLICA")
	var rows [][]string
	for _, s := range statuses {
		row := []string{s.ID}
		for _, c := range cols {
			i := slices.IndexFunc(s.Types, func(t TypeStatus) bool { return t.Type == c })
			if i < 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, cell(s.Types[i]))
		}
		rows = append(rows, append(row, s.Replica))
	}
	return writeTable(w, header, rows)
}

// cell is "STATE (version)": the version the proxy ACKed when synced, the
// one it rejected when NACKED, else the one sent.
func cell(t TypeStatus) string {
	v := t.SentVersion
	switch t.Summary {
	case "SYNCED":
		v = t.AckedVersion
	case "NACKED":
		if t.LastNack != nil && t.LastNack.Version != "" {
			v = t.LastNack.Version
		}
	case "NOT SENT":
		return t.Summary
	}
	if v == "" {
		return t.Summary
	}
	return fmt.Sprintf("%s (%s)", t.Summary, shortVersion(v))
}

// shortVersion abbreviates content-hash versions as git abbreviates
// commits; they stay unique enough to compare by eye.
func shortVersion(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// writeStructured writes v as indented JSON or as YAML.
func writeStructured(w io.Writer, v any, format string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeJSONAs(w, b, format)
}

// writeJSONAs writes a JSON document as is (indented) or as YAML.
func writeJSONAs(w io.Writer, js []byte, format string) error {
	if format == OutputYAML {
		y, err := yaml.JSONToYAML(js)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	if len(js) > 0 && js[len(js)-1] != '\n' {
		js = append(js, '\n')
	}
	_, err := w.Write(js)
	return err
}
