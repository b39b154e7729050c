package validation_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// Annotations on the objects in testdata/: wantAnnotation lists, one a
// line, the fields Validate must report (objects without it must be
// valid); messageAnnotation is a fragment of the first message.
const (
	wantAnnotation    = "wayfinder.test/want"
	messageAnnotation = "wayfinder.test/message"
)

// TestTestdata validates the manifests under testdata/ end to end, through
// the file parser, as a user's files would be.
func TestTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	total := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		configs, errs := manifest.Parse(file, data, manifest.Options{})
		for _, e := range errs {
			t.Errorf("parse: %v", e)
		}
		for _, c := range configs {
			total++
			t.Run(filepath.Base(file)+"/"+c.Name, func(t *testing.T) {
				var want []string
				for _, line := range strings.Split(c.Annotations[wantAnnotation], "\n") {
					if line = strings.TrimSpace(line); line != "" {
						want = append(want, line)
					}
				}
				checkErrors(t, validation.Validate(c), want, c.Annotations[messageAnnotation])
			})
		}
	}
	if total < 10 {
		t.Errorf("only %d objects in testdata; the files did not parse as expected", total)
	}
}
