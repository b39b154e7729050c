package analysis

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	filegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// convertGatewayAPI runs the server's Gateway API conversion on objs, as
// file mode does: the Istio Gateways and VirtualServices it generates
// (analyzed like the others, so policies targeting a Gateway API Gateway
// or route find it) and its problems, located in the objects' files. The
// first definition of an object wins, as in file mode.
func convertGatewayAPI(objs []manifest.GatewayAPIObject, configs []config.Config, domainSuffix string) ([]config.Config, []*config.Error) {
	if len(objs) == 0 {
		return nil, nil
	}
	where := map[string]string{}
	seen := map[string]bool{}
	list := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		if seen[o.Key()] {
			continue
		}
		seen[o.Key()] = true
		list = append(list, o.Object)
		where[gatewayapi.Source(o.Kind.Name, o.Object)] = o.Source
	}
	in := gatewayapi.InputOf(list)
	var entries []config.Config
	for _, c := range configs {
		if c.Kind == schema.ServiceEntry {
			entries = append(entries, c)
		}
	}
	in.Services = filegatewayapi.ServicesFromEntries(memory.New(entries), domainSuffix)
	in.ServiceEntries = entries
	// The status times are not reported: any fixed time will do.
	res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{DomainSuffix: domainSuffix}, time.Unix(0, 0))
	errs := make([]*config.Error, len(res.Errors))
	for i, e := range res.Errors {
		errs[i] = e
		if loc := where[e.Source]; loc != "" {
			located := *e
			located.Source, located.Message = loc, e.Message+" ("+e.Source+")"
			errs[i] = &located
		}
	}
	return res.Configs, errs
}
