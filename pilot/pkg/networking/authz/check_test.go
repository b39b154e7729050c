package authz

import (
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	// The typed configs the filters hold, for UnmarshalNew.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
)

type hcmFilter struct {
	name     string
	validate func() error
	config   *anypb.Any
}

func wrapHTTP(fs []*hcmv3.HttpFilter) []*hcmFilter {
	var out []*hcmFilter
	for _, f := range fs {
		out = append(out, &hcmFilter{name: f.GetName(), validate: f.ValidateAll, config: f.GetTypedConfig()})
	}
	return out
}

// checkFilter validates a filter and its typed config, and, inside RBAC
// configs, the uri_template configs (Anys again).
func checkFilter(t *testing.T, name string, validate func() error, cfg *anypb.Any) {
	t.Helper()
	if err := validate(); err != nil {
		t.Errorf("filter %s: %v", name, err)
	}
	m, err := cfg.UnmarshalNew()
	if err != nil {
		t.Fatalf("filter %s: %v", name, err)
	}
	v, ok := m.(interface{ ValidateAll() error })
	if !ok {
		t.Fatalf("filter %s: %T cannot validate", name, m)
	}
	if err := v.ValidateAll(); err != nil {
		t.Errorf("filter %s config: %v", name, err)
	}
	checkNestedAnys(t, name, m)
}

// checkNestedAnys unpacks every Any inside m and validates it.
func checkNestedAnys(t *testing.T, name string, m proto.Message) {
	t.Helper()
	var walk func(proto.Message)
	walk = func(m proto.Message) {
		r := m.ProtoReflect()
		if a, ok := m.(*anypb.Any); ok {
			inner, err := a.UnmarshalNew()
			if err != nil {
				t.Errorf("filter %s: nested %s: %v", name, a.GetTypeUrl(), err)
				return
			}
			if v, ok := inner.(interface{ ValidateAll() error }); ok {
				if err := v.ValidateAll(); err != nil {
					t.Errorf("filter %s: nested %s: %v", name, a.GetTypeUrl(), err)
				}
			}
			walk(inner)
			return
		}
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message().Interface())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message().Interface())
					return true
				})
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				walk(v.Message().Interface())
			}
			return true
		})
	}
	walk(m)
}
