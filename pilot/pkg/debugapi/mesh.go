package debugapi

import (
	"encoding/json"
	"time"
)

// Meshz is the mesh config in force, in /debug/configz (section
// MeshSection).
type Meshz struct {
	// Source is where the config in force came from: the --mesh-config
	// file, "ConfigMap ns/name key mesh", or "defaults" (istiod's).
	Source string `json:"source"`
	// Watching is where updates are read from (the same as Source once
	// one has been accepted).
	Watching string `json:"watching"`
	// RootNamespace is the root namespace pushes use: --root-namespace
	// when given, else the mesh config's rootNamespace.
	RootNamespace string `json:"rootNamespace"`
	// Config is the merged MeshConfig (istiod's defaults with the source
	// applied) in protojson form.
	Config json.RawMessage `json:"config"`
	// Ignored are the fields the source sets that Wayfinder does not read.
	Ignored []string `json:"ignored,omitempty"`
	// Warnings are the problems that did not refuse the config in force.
	Warnings []string `json:"warnings,omitempty"`
	// LastError is the last refused or unreadable update, absent when the
	// last update was accepted; the config in force is the one before it.
	LastError *MeshErrorz `json:"lastError,omitempty"`
	// Rejected counts refused and unreadable updates since start
	// (wayfinder_mesh_config_rejected_total).
	Rejected uint64 `json:"rejected"`
}

// MeshErrorz is a refused mesh config update.
type MeshErrorz struct {
	Source string    `json:"source"`
	Error  string    `json:"error"`
	Time   time.Time `json:"time"`
}
