package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

// TestCachedTranslationMatchesGolden runs every golden input through the
// route cache twice, cold and then warm (parsed again, so every spec is a
// new object of equal content), and asserts both give the golden output
// and errors byte for byte, and that the warm run reused every
// VirtualService translation.
func TestCachedTranslationMatchesGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", name+".golden.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			caches := NewCaches()
			file := filepath.Base(in)
			cold := render(t, translateWith(t, file, data, caches))
			translated := caches.Routes.Stats().Translations
			warm := render(t, translateWith(t, file, data, caches))
			if !bytes.Equal(cold, want) {
				t.Errorf("cold cached translation differs from the golden:\n%s", golden.FirstDiff(want, cold))
			}
			if !bytes.Equal(warm, want) {
				t.Errorf("warm cached translation differs from the golden:\n%s", golden.FirstDiff(want, warm))
			}
			st := caches.Routes.Stats()
			if st.Translations != translated {
				t.Errorf("warm run translated %d VirtualServices again; want 0", st.Translations-translated)
			}
			if translated > 0 && st.Reused < translated {
				t.Errorf("warm run reused %d translations, cold run made %d", st.Reused, translated)
			}
		})
	}
}
