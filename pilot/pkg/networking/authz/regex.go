package authz

import (
	"fmt"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
)

// checkRegexes fails for a regex in m that Envoy would refuse for its RE2
// program size (route.EnvoyMaxRegexProgramSize): istiod's serviceAccounts
// and namespaces regexes grow with the names (a 25-character namespace
// and service account already pass it), and one refused regex makes Envoy
// reject the whole listener. The value is then handled as any value that
// cannot be translated.
func checkRegexes(m proto.Message) error {
	var err error
	var walk func(protoreflect.Message)
	walk = func(r protoreflect.Message) {
		if re, ok := r.Interface().(*matcherv3.RegexMatcher); ok {
			size, perr := route.RegexProgramSize(re.GetRegex())
			switch {
			case perr != nil:
				err = fmt.Errorf("regex %q: %v", re.GetRegex(), perr)
			case size > route.EnvoyMaxRegexProgramSize:
				err = fmt.Errorf("regex %q has an RE2 program size of about %d, over Envoy's limit of %d",
					re.GetRegex(), size, route.EnvoyMaxRegexProgramSize)
			}
			return
		}
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				walk(v.Message())
			}
			return err == nil
		})
	}
	walk(m.ProtoReflect())
	return err
}
