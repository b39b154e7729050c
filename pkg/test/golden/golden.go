// Package golden runs golden-file tests: each testdata/<case>.in.yaml is
// turned into output that must equal testdata/<case>.golden.yaml (Run), or
// each folder testdata/<case>/ into output that must equal a golden file
// beside it (RunDirs, for inputs that span several files). With update
// set, goldens are rewritten and those whose input is gone deleted.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Produce turns one input file's bytes into the output to compare. It may
// fail the test for problems that are not output (invalid resources).
type Produce func(t *testing.T, file string, data []byte) []byte

// Run runs a subtest per dir/*.in.yaml. Each input is produced twice: the
// two outputs must be identical, so nondeterminism fails before any golden
// is compared.
func Run(t *testing.T, dir string, update bool, produce Produce) {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join(dir, "*.in.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no %s/*.in.yaml inputs (err %v)", dir, err)
	}
	cases := map[string]bool{}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		cases[name] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Base(in)
			got := produce(t, file, data)
			if again := produce(t, file, data); !bytes.Equal(got, again) {
				t.Errorf("two translations of the same input differ:\n%s", FirstDiff(got, again))
			}
			compare(t, filepath.Join(dir, name+".golden.yaml"), got, update)
		})
	}
	sweep(t, dir, ".golden.yaml", cases, update)
}

// ProduceDir turns one case folder into the output to compare.
type ProduceDir func(t *testing.T, caseDir string) []byte

// RunDirs runs a subtest per folder dir/<case>/, whose output must equal
// dir/<case><suffix> (suffix such as ".golden.txt"): for inputs whose
// output names their files and lines, so they cannot be one file. As in
// Run, each case is produced twice and the outputs must be identical.
func RunDirs(t *testing.T, dir, suffix string, update bool, produce ProduceDir) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		cases[name] = true
		t.Run(name, func(t *testing.T) {
			caseDir := filepath.Join(dir, name)
			got := produce(t, caseDir)
			if again := produce(t, caseDir); !bytes.Equal(got, again) {
				t.Errorf("two runs over the same input differ:\n%s", FirstDiff(got, again))
			}
			compare(t, filepath.Join(dir, name+suffix), got, update)
		})
	}
	if len(cases) == 0 {
		t.Fatalf("no case folders in %s", dir)
	}
	sweep(t, dir, suffix, cases, update)
}

// compare checks got against the golden file, or writes it with update.
func compare(t *testing.T, golden string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run make golden, or this test with -update, to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", golden, FirstDiff(want, got))
	}
}

// sweep reports goldens in dir whose case is gone, or deletes them with
// update.
func sweep(t *testing.T, dir, suffix string, cases map[string]bool, update bool) {
	t.Helper()
	goldens, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	for _, g := range goldens {
		if cases[strings.TrimSuffix(filepath.Base(g), suffix)] {
			continue
		}
		if update {
			if err := os.Remove(g); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s has no input; run with -update to delete it", g)
	}
}

// FirstDiff shows the first line where want and got differ.
func FirstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(no line differs)"
}
