package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
)

// TelemetryType is the proxy-config type that shows the access logging
// and tracing decision in force for a proxy (not a part of its config
// dump: the Telemetry objects and providers that produced the loggers and
// tracer the listeners carry).
const TelemetryType = "telemetry"

// FetchTelemetry reads the telemetry decision of node id from c's
// /debug/adsz; an error when the proxy has none yet.
func FetchTelemetry(ctx context.Context, c *Client, id string) (*debugapi.AdszTelemetry, error) {
	var az debugapi.Adsz
	if err := c.Get(ctx, "/debug/adsz", &az); err != nil {
		return nil, err
	}
	for _, p := range az.Proxies {
		if p.ID != id {
			continue
		}
		if p.Telemetry == nil {
			return nil, fmt.Errorf("proxy %s has no gateway listeners yet (no telemetry decision)", id)
		}
		return p.Telemetry, nil
	}
	return nil, fmt.Errorf("proxy %q is not connected", id)
}

// WriteTelemetry renders t as a table (what applies, from where), or as
// JSON or YAML.
func WriteTelemetry(w io.Writer, t *debugapi.AdszTelemetry, output string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	if output == OutputJSON || output == OutputYAML {
		js, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return err
		}
		return writeJSONAs(w, js, output)
	}
	var rows [][]string
	add := func(what, value, from string) { rows = append(rows, []string{what, value, from}) }
	for _, lvl := range []struct{ name, obj string }{{"root", t.Root}, {"namespace", t.Namespace}} {
		if lvl.obj != "" {
			add("telemetry", lvl.obj, lvl.name)
		}
	}
	for _, o := range t.Workload {
		add("telemetry", o, "selector or targetRefs")
	}
	if t.MeshAccessLog {
		add("access log", "mesh config accessLogFile", "mesh config")
	}
	for _, a := range t.AccessLogs {
		v := a.Provider
		switch {
		case a.Disabled:
			v += " (disabled)"
		case a.Filter != nil:
			v += " if " + *a.Filter
		}
		add("access log", v, "telemetry")
	}
	switch {
	case t.MeshTracing:
		add("tracing", "mesh config enableTracing", "mesh config")
	case t.Tracing != nil:
		v := t.Tracing.Provider
		if t.Tracing.Disabled {
			v += " (disabled)"
		} else if t.Tracing.RandomSamplingPercentage != nil {
			v += " sampling " + strconv.FormatFloat(*t.Tracing.RandomSamplingPercentage, 'f', -1, 64) + "%"
		}
		add("tracing", v, "telemetry")
	}
	for _, p := range t.Problems {
		add("problem", p, "")
	}
	if len(rows) == 0 {
		add("(nothing)", "", "")
	}
	for _, r := range rows {
		r[1] = strings.ReplaceAll(r[1], "\t", " ")
	}
	return writeTable(w, []string{"WHAT", "VALUE", "FROM"}, rows)
}
