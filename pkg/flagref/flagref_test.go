package flagref

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func command() *cobra.Command {
	root := &cobra.Command{Use: "tool"}
	root.PersistentFlags().String("kubeconfig", "", "cluster to read")
	cmd := &cobra.Command{Use: "serve [flags]", Run: func(*cobra.Command, []string) {}}
	f := cmd.Flags()
	f.String("zeta-addr", "127.0.0.1:1", "address | port")
	f.Duration("alpha-wait", time.Second, "how long")
	f.StringSlice("names", nil, "names")
	f.BoolP("verbose", "v", false, "more")
	f.Int("hidden", 1, "not shown")
	_ = f.MarkHidden("hidden")
	root.AddCommand(cmd)
	return cmd
}

func TestRenderKeepsDefinitionOrderAndShowsDefaults(t *testing.T) {
	got := Render(command())
	for _, want := range []string{
		"`tool serve [flags]`",
		"| `--zeta-addr` | string | `127.0.0.1:1` | address \\| port |",
		"| `--alpha-wait` | duration | `1s` | how long |",
		"| `--names` | stringSlice |  | names |",
		"| `-v, --verbose` | bool | `false` | more |",
		"| `--kubeconfig` | string |  | cluster to read |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered reference lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "zeta-addr") > strings.Index(got, "alpha-wait") {
		t.Error("flags sorted by name; want the order they are defined in")
	}
	if strings.Index(got, "verbose") > strings.Index(got, "kubeconfig") {
		t.Error("inherited flags before the command's own")
	}
	if strings.Contains(got, "hidden") {
		t.Error("a hidden flag is listed")
	}
}

func TestCheckFindsDriftAndUpdateRewritesOnlyTheBlock(t *testing.T) {
	begin, end := Markers("serve flags")
	path := filepath.Join(t.TempDir(), "doc.md")
	doc := "# Title\n\nintro\n\n" + begin + "\nold table\n" + end + "\n\noutro\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	body := Render(command())
	if err := Check(path, "serve flags", body, false); err == nil || !strings.Contains(err.Error(), "make docs") {
		t.Fatalf("Check of a stale block = %v, want an error saying how to regenerate", err)
	}
	if err := Check(path, "serve flags", body, true); err != nil {
		t.Fatal(err)
	}
	if err := Check(path, "serve flags", body, false); err != nil {
		t.Fatalf("after update: %v", err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "# Title\n\nintro\n\n"+begin+"\n") || !strings.HasSuffix(string(data), end+"\n\noutro\n") {
		t.Errorf("update touched text outside the block:\n%s", data)
	}
	if err := Check(path, "other", body, false); err == nil {
		t.Error("Check of a block with no markers succeeded")
	}
}
