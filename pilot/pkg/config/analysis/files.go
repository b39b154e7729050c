package analysis

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// Load reads the config files under paths (folders, read recursively as
// file mode reads --config-dir, or single files), parses and validates
// every document, and returns the objects that are good, one error per
// problem, and the content of every file read (for locating findings). The
// first definition of an object wins, as in file mode; later ones are
// reported. An unreadable path is an error. Gateway API objects are left
// out: LoadAll returns them too.
func Load(paths []string) ([]config.Config, []*config.Error, map[string][]byte, error) {
	l, err := LoadAll(paths)
	return l.Configs, l.Errors, l.Contents, err
}

// Loaded is what LoadAll read.
type Loaded struct {
	// Configs are the Istio objects that parsed and validated, Errors one
	// per problem, Contents every file read (for locating findings).
	Configs  []config.Config
	Errors   []*config.Error
	Contents map[string][]byte
	// GatewayAPI are the Gateway API objects, for Options.GatewayAPI.
	GatewayAPI []manifest.GatewayAPIObject
}

// LoadAll is Load, also returning the Gateway API objects of the files.
func LoadAll(paths []string) (Loaded, error) {
	var files []string
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return Loaded{}, err
		}
		if !st.IsDir() {
			files = append(files, root)
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != root && file.Ignored(d.Name()) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.IsDir() && file.IsConfigFile(d.Name()) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return Loaded{}, err
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)

	contents := map[string][]byte{}
	var good []config.Config
	var errs []*config.Error
	var gwAPI []manifest.GatewayAPIObject
	first := map[config.Key]string{}
	firstGW := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return Loaded{}, err
		}
		contents[f] = data
		all, parseErrs := manifest.ParseAll(f, data, manifest.Options{})
		errs = append(errs, parseErrs...)
		for _, o := range all.GatewayAPI {
			// As the server's folder does (file/gatewayapi.go): the first
			// definition, by path, is used; another is reported.
			if src, dup := firstGW[o.Key()]; dup {
				errs = append(errs, &config.Error{Source: o.Source,
					Key:     config.Key{Namespace: o.Object.GetNamespace(), Name: o.Object.GetName()},
					Message: fmt.Sprintf("%s: duplicate of the definition in %s, which is used; this one is ignored", o.Key(), src)})
				continue
			}
			firstGW[o.Key()] = o.Source
			gwAPI = append(gwAPI, o)
		}
		for _, obj := range all.Configs {
			if err := validate(obj); err != nil {
				errs = append(errs, config.ErrorsFor(obj.Source, obj.Key(), err)...)
				continue
			}
			if src, dup := first[obj.Key()]; dup {
				errs = append(errs, &config.Error{Source: obj.Source, Key: obj.Key(),
					Message: fmt.Sprintf("duplicate of the definition in %s, which is used; this one is ignored", src)})
				continue
			}
			first[obj.Key()] = obj.Source
			good = append(good, obj)
		}
	}
	return Loaded{Configs: good, Errors: errs, Contents: contents, GatewayAPI: gwAPI}, nil
}

// validate is validation.Validate, with a panic turned into an error as
// the server does.
func validate(obj config.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validation failed unexpectedly: %v", r)
		}
	}()
	return validation.Validate(obj)
}
