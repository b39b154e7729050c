package envoyfilter

import (
	"fmt"

	udpatype "github.com/cncf/xds/go/udpa/type/v1"
	xdstype "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config/xds"
)

// durationName is replaced, not merged, as istiod's pkg/proto/merge does
// (golang/protobuf#1359: merging {seconds: 5} into {nanos: 1} is not 5s).
var durationName = (&durationpb.Duration{}).ProtoReflect().Descriptor().FullName()

// mergeProto is istiod's merge.Merge: proto.Merge (lists appended, map
// entries replaced, scalars set) except that Durations are replaced.
func mergeProto(dst, src proto.Message) {
	mergeMessage(dst.ProtoReflect(), src.ProtoReflect())
}

func mergeMessage(dst, src protoreflect.Message) {
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			dl, sl := dst.Mutable(fd).List(), v.List()
			for i := 0; i < sl.Len(); i++ {
				if fd.Message() != nil {
					e := dl.NewElement()
					mergeMessage(e.Message(), sl.Get(i).Message())
					dl.Append(e)
				} else {
					dl.Append(cloneScalar(fd, sl.Get(i)))
				}
			}
		case fd.IsMap():
			dm := dst.Mutable(fd).Map()
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if fd.MapValue().Message() != nil {
					e := dm.NewValue()
					mergeMessage(e.Message(), mv.Message())
					dm.Set(k, e)
				} else {
					dm.Set(k, cloneScalar(fd.MapValue(), mv))
				}
				return true
			})
		case fd.Message() != nil:
			if fd.Message().FullName() == durationName {
				dst.Set(fd, protoreflect.ValueOfMessage(proto.Clone(v.Message().Interface()).ProtoReflect()))
			} else {
				mergeMessage(dst.Mutable(fd).Message(), v.Message())
			}
		default:
			dst.Set(fd, cloneScalar(fd, v))
		}
		return true
	})
	if u := src.GetUnknown(); len(u) > 0 {
		dst.SetUnknown(append(dst.GetUnknown(), u...))
	}
}

func cloneScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	if fd.Kind() == protoreflect.BytesKind {
		return protoreflect.ValueOfBytes(append([]byte{}, v.Bytes()...))
	}
	return v
}

// mergeAny is istiod's util.MergeAnyWithAny: both configs decoded, src
// merged into dst, dst re-encoded. istiod panics (and drops every patch of
// the listener) when the types differ; here that is an error for this
// patch alone. A src in the deprecated TypedStruct form whose type_url is
// dst's type is decoded as that type first, so a merge written that way
// merges instead of failing.
func mergeAny(dst, src *anypb.Any) (*anypb.Any, error) {
	dstX, err := dst.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("typed_config %s: %s", dst.GetTypeUrl(), xds.CleanError(err))
	}
	srcX, err := src.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("typed_config %s: %s", src.GetTypeUrl(), xds.CleanError(err))
	}
	if url, value, ok := typedStruct(srcX); ok && url == dst.GetTypeUrl() {
		inner, err := decodeTypedStruct(url, value)
		if err != nil {
			return nil, err
		}
		if inner != nil {
			srcX = inner
		}
	}
	if dstX.ProtoReflect().Descriptor().FullName() != srcX.ProtoReflect().Descriptor().FullName() {
		return nil, fmt.Errorf("MERGE cannot change typed_config @type from %s to %s (use REPLACE)",
			dst.GetTypeUrl(), src.GetTypeUrl())
	}
	mergeProto(dstX, srcX)
	return protoconv.Any(dstX)
}

// typedStruct unwraps either TypedStruct form.
func typedStruct(m proto.Message) (typeURL string, value *structpb.Struct, ok bool) {
	switch ts := m.(type) {
	case *udpatype.TypedStruct:
		return ts.GetTypeUrl(), ts.GetValue(), true
	case *xdstype.TypedStruct:
		return ts.GetTypeUrl(), ts.GetValue(), true
	}
	return "", nil, false
}

// decodeTypedStruct decodes a TypedStruct's value as its type_url, or
// returns nil when the type is not one Wayfinder knows (Envoy may: it is
// then passed on unchecked, as istiod does).
func decodeTypedStruct(typeURL string, value *structpb.Struct) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return nil, nil
	}
	msg := mt.New().Interface()
	if value == nil {
		return msg, nil
	}
	js, err := protojson.Marshal(value)
	if err != nil {
		return nil, err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, msg); err != nil {
		return nil, fmt.Errorf("TypedStruct value as %s: %s", typeURL, xds.CleanError(err))
	}
	return msg, nil
}
