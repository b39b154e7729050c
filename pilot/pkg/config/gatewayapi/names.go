package gatewayapi

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLength is the longest generated name: the store validates names
// as DNS-1123 labels of at most 63 characters (a Gateway's name must be
// one, for "namespace/name" references), and a VirtualService's as a
// subdomain whose labels are at most 63 characters.
const maxNameLength = 63

// generatedName returns name, which ends in "-"+NameSuffix, when it fits;
// a longer one (a long Gateway, listener or hostname) is cut and given a
// hash of the whole, so that it stays valid, unique and stable.
func generatedName(name string) string {
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	tail := "-" + hex.EncodeToString(sum[:])[:10] + "-" + NameSuffix
	head := strings.TrimRight(name[:maxNameLength-len(tail)], "-.")
	return head + tail
}
