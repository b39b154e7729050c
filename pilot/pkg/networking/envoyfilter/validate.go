package envoyfilter

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pkg/config/xds"
)

type validatorAll interface{ ValidateAll() error }

// validate is what a patched resource must pass to be served: Envoy's
// proto constraints (ValidateAll) on the resource and, since ValidateAll
// stops at a google.protobuf.Any, on every typed config inside it, each
// of which must unpack (TypedStruct values are decoded as their type_url
// when Wayfinder knows it).
func validate(m proto.Message) error {
	if v, ok := m.(validatorAll); ok {
		if err := v.ValidateAll(); err != nil {
			return err
		}
	}
	return checkFields(m.ProtoReflect(), "")
}

var anyName = (&anypb.Any{}).ProtoReflect().Descriptor().FullName()

func checkFields(m protoreflect.Message, path string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		if path != "" {
			name = path + "." + name
		}
		switch {
		case fd.IsList():
			if fd.Message() == nil {
				return true
			}
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkMessage(l.Get(i).Message(), fmt.Sprintf("%s[%d]", name, i))
			}
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				return true
			}
			var keys []string
			byKey := map[string]protoreflect.Message{}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				keys = append(keys, k.String())
				byKey[k.String()] = mv.Message()
				return true
			})
			slices.Sort(keys)
			for _, k := range keys {
				if err = checkMessage(byKey[k], fmt.Sprintf("%s[%s]", name, k)); err != nil {
					break
				}
			}
		case fd.Message() != nil:
			err = checkMessage(v.Message(), name)
		}
		return err == nil
	})
	return err
}

func checkMessage(m protoreflect.Message, path string) error {
	if m.Descriptor().FullName() != anyName {
		return checkFields(m, path)
	}
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return nil
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		return fmt.Errorf("%s: @type %s does not unpack: %v", path, a.GetTypeUrl(), xds.CleanError(err))
	}
	if url, value, ok := typedStruct(inner); ok {
		decoded, err := decodeTypedStruct(url, value)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if decoded == nil {
			return nil
		}
		inner = decoded
	}
	if err := validate(inner); err != nil {
		return fmt.Errorf("%s (%s): %v", path, a.GetTypeUrl(), err)
	}
	return nil
}

// validateAt is validate for a part of a resource at path (e.g.
// "virtual_hosts[3]"), so that problems name it as validating the whole
// resource would.
func validateAt(m proto.Message, path string) error {
	if v, ok := m.(validatorAll); ok {
		if err := v.ValidateAll(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return checkFields(m.ProtoReflect(), path)
}
