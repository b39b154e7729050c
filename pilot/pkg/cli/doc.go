// Package cli is the logic of the `wayfinder` command-line tool: it reads
// the control plane's debug endpoints (proxy-status, proxy-config,
// version) and renders them as tables or raw JSON/YAML. Flags are parsed in
// pilot/cmd/wayfinder; everything here takes typed options and writes to
// an io.Writer, so it is tested against a real server in-process.
package cli
