package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// TestSubsetParsesAsTheFullParser parses every YAML file in the
// repository twice, with the blockyaml fast path and without it, and
// requires the same objects and the same errors: the fast path (its tree
// standing in for JSON, specs set from it by specFromTree) changes the
// cost of parsing, nothing else.
func TestSubsetParsesAsTheFullParser(t *testing.T) {
	files := 0
	objects := 0
	err := filepath.WalkDir("../../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		fast, fastErrs := ParseAll(path, data, Options{})
		useSubset = false
		full, fullErrs := ParseAll(path, data, Options{})
		useSubset = true
		if !reflect.DeepEqual(fastErrs, fullErrs) {
			t.Errorf("%s: errors differ:\nfast %v\nfull %v", path, fastErrs, fullErrs)
		}
		if len(fast.Configs) != len(full.Configs) || len(fast.GatewayAPI) != len(full.GatewayAPI) {
			t.Errorf("%s: %d+%d objects with the fast path, %d+%d without", path, len(fast.Configs), len(fast.GatewayAPI), len(full.Configs), len(full.GatewayAPI))
			return nil
		}
		for i := range fast.Configs {
			f, g := fast.Configs[i], full.Configs[i]
			if !reflect.DeepEqual(f.Meta, g.Meta) || !proto.Equal(f.Spec, g.Spec) {
				t.Errorf("%s: object %d differs:\nfast %v %v\nfull %v %v", path, i, f.Meta, f.Spec, g.Meta, g.Spec)
			}
		}
		if !reflect.DeepEqual(fast.GatewayAPI, full.GatewayAPI) {
			t.Errorf("%s: Gateway API objects differ", path)
		}
		objects += len(fast.Configs) + len(fast.GatewayAPI)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files, %d objects", files, objects)
	if objects < 100 {
		t.Fatalf("only %d objects parsed: the comparison covers too little", objects)
	}
}
