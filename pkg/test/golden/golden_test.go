package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUpdateWritesThenCompares(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.in.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "gone.golden.yaml")
	if err := os.WriteFile(stale, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	upper := func(_ *testing.T, file string, data []byte) []byte { return append([]byte(file+"\n"), data...) }

	Run(t, dir, true, upper)
	got, err := os.ReadFile(filepath.Join(dir, "a.golden.yaml"))
	if err != nil || string(got) != "a.in.yaml\nx: 1\n" {
		t.Fatalf("update wrote %q, %v", got, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("update kept the golden without input: %v", err)
	}
	// Without update the freshly written golden matches.
	Run(t, dir, false, upper)
}

func TestFirstDiff(t *testing.T) {
	if got := FirstDiff([]byte("a\nb\nc"), []byte("a\nB\nc")); got != "line 2:\n  want: b\n  got:  B" {
		t.Errorf("diff %q", got)
	}
	if got := FirstDiff([]byte("a"), []byte("a\nextra")); got != "line 2:\n  want: \n  got:  extra" {
		t.Errorf("longer output %q", got)
	}
	if got := FirstDiff([]byte("same"), []byte("same")); got != "(no line differs)" {
		t.Errorf("equal %q", got)
	}
}

func TestRunDirsWritesThenCompares(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a/one.yaml": "1\n", "a/two.yaml": "2\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(dir, "gone.golden.txt")
	if err := os.WriteFile(stale, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The output names the case folder's files, in order.
	list := func(t *testing.T, caseDir string) []byte {
		entries, err := os.ReadDir(caseDir)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, e := range entries {
			out = append(out, e.Name()+"\n"...)
		}
		return out
	}

	RunDirs(t, dir, ".golden.txt", true, list)
	got, err := os.ReadFile(filepath.Join(dir, "a.golden.txt"))
	if err != nil || string(got) != "one.yaml\ntwo.yaml\n" {
		t.Fatalf("update wrote %q, %v", got, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("update kept the golden without a case folder: %v", err)
	}
	RunDirs(t, dir, ".golden.txt", false, list)
}
