package gatewayapi_test

import (
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

func configEqual(a, b config.Config) bool {
	return a.Key() == b.Key() && proto.Equal(a.Spec, b.Spec)
}
