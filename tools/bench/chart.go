package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// writeChart draws cost against services, one line per server and
// gateway count, as a 2x2 PNG. The drawing is tools/benchchart, its own
// module (so the plotting library stays out of the main go.mod): this
// runs it with `go run`, giving it the results as the results file's JSON
// on stdin.
//
// Cases with gateway policies are left out: the chart's lines are cost
// against services for the plain workload, and a policy case at the same
// size would be a second point on the same line. With none left there
// is no chart.
func writeChart(path string, results []result) error {
	results = slices.DeleteFunc(slices.Clone(results), func(r result) bool { return r.Case.hasPolicies() })
	if len(results) == 0 {
		return nil
	}
	data, err := json.Marshal(struct {
		Results []result `json:"results"`
	}{results})
	if err != nil {
		return err
	}
	dir, err := benchchartDir()
	if err != nil {
		return err
	}
	out, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "run", ".", "-in", "-", "-out", out)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(data)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("drawing %s with %s: %w", path, dir, err)
	}
	return nil
}

// benchchartDir is tools/benchchart in the checkout the go command is run
// from (the repository root for `make bench`, tools/bench in its tests).
func benchchartDir() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	dir := filepath.Join(root, "tools", "benchchart")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the chart's module: %w", err)
	}
	return dir, nil
}
