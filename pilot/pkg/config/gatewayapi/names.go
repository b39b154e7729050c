package gatewayapi

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	gw "sigs.k8s.io/gateway-api/apis/v1"
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

// ListenerSetIstioGatewayName is the name of the Istio Gateway generated,
// in the parent Gateway's namespace, for listener of the ListenerSet
// namespace/name attached to Gateway gateway. Listener names need not be
// unique across a Gateway and its ListenerSets, and ListenerSets of
// several namespaces may share a name, so a hash of the set's namespace,
// name and listener keeps it apart from the Gateway's own listeners'
// (IstioGatewayName) and every other set's, and stable.
func ListenerSetIstioGatewayName(gateway, namespace, name string, listener gw.SectionName) string {
	return generatedName(gateway + "-" + name + "-" + string(listener) + "-" + shortHash(namespace+"/"+name+"/"+string(listener)) + "-" + NameSuffix)
}

// shortHash is 8 hex digits of the SHA-256 of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
