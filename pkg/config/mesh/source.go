package mesh

import "fmt"

// Source names where a mesh config came from: a file given with
// --mesh-config, or a key of a ConfigMap. Every error and log line about
// a mesh config starts with it. The zero Source means istiod's defaults.
type Source struct {
	// File is the path of a mesh config file.
	File string
	// Namespace, Name and Key locate a ConfigMap's entry.
	Namespace, Name, Key string
}

// FileSource is the Source of a mesh config file.
func FileSource(path string) Source { return Source{File: path} }

// ConfigMapSource is the Source of the mesh key of a ConfigMap, as istiod
// reads it (ConfigMapName in its own namespace).
func ConfigMapSource(namespace, name string) Source {
	return Source{Namespace: namespace, Name: name, Key: ConfigMapKey}
}

// String renders the source as errors show it: the file path, or
// "ConfigMap ns/name key mesh", or "defaults".
func (s Source) String() string {
	switch {
	case s.File != "":
		return s.File
	case s.Name != "":
		return fmt.Sprintf("ConfigMap %s/%s key %s", s.Namespace, s.Name, s.Key)
	default:
		return "defaults"
	}
}
