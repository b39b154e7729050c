package protoconv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"

	"google.golang.org/protobuf/proto"
)

// Hasher names a sequence of messages and strings by content: two
// sequences hash alike exactly when they are equal, message by message
// in deterministic encoding (each length-prefixed, so boundaries count).
// Translators key gateway groups by it.
type Hasher struct{ h hash.Hash }

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

// Message adds m (nil adds an empty message).
func (x *Hasher) Message(m proto.Message) {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m) // a built message always encodes
	fmt.Fprintf(x.h, "m%d:", len(b))
	x.h.Write(b)
}

// Messages adds a list of messages, its length first.
func Messages[M proto.Message](x *Hasher, ms []M) {
	fmt.Fprintf(x.h, "[%d", len(ms))
	for _, m := range ms {
		x.Message(m)
	}
}

// String adds s.
func (x *Hasher) String(s string) {
	fmt.Fprintf(x.h, "s%d:%s", len(s), s)
}

// Sum is the hash so far: 16 hex digits.
func (x *Hasher) Sum() string { return hex.EncodeToString(x.h.Sum(nil)[:8]) }
