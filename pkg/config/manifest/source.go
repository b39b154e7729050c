package manifest

import (
	"strconv"
	"strings"
)

// SplitDocumentSource splits a source DocumentSource wrote, "file
// (document N)", into file and N; any other source is the file, with
// document 0. Callers sort problems by it (document 10 after document 9).
func SplitDocumentSource(src string) (file string, index int) {
	const marker = " (document "
	i := strings.LastIndex(src, marker)
	if i < 0 || !strings.HasSuffix(src, ")") {
		return src, 0
	}
	n, err := strconv.Atoi(src[i+len(marker) : len(src)-1])
	if err != nil {
		return src, 0
	}
	return src[:i], n
}
