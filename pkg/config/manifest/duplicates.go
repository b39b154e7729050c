package manifest

import (
	"regexp"
	"strconv"
	"strings"
)

// duplicateKey is how the strict YAML decoder reports a key a mapping sets
// twice.
var duplicateKey = regexp.MustCompile(`line (\d+): key (".*?") already set in map`)

// duplicateKeys returns a message naming every key that a mapping of the
// document sets twice, with its line in the file (the document starts at
// line firstLine), or "" if there is none; strictErr is the strict
// decoder's error on the document (YAMLToJSONStrict), nil if it had none. The plain decoder silently keeps the last value,
// so the object would not be what its author meant; like the Kubernetes
// apiserver's strict field validation, the object is rejected instead.
func duplicateKeys(strictErr error, firstLine int) string {
	if strictErr == nil {
		return ""
	}
	err := strictErr
	var dups []string
	for _, m := range duplicateKey.FindAllStringSubmatch(err.Error(), -1) {
		line, convErr := strconv.Atoi(m[1])
		if convErr != nil {
			continue
		}
		dups = append(dups, "key "+m[2]+" at line "+strconv.Itoa(firstLine+line-1))
	}
	if len(dups) == 0 {
		return ""
	}
	return "duplicate key in a mapping (the object is rejected): " + strings.Join(dups, ", ")
}
