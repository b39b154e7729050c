package manifest

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
)

// TestReachesDuration checks the shortcut that skips the duration walk:
// it must be taken only for kinds that cannot hold a Duration anywhere.
func TestReachesDuration(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  proto.Message
		want bool
	}{
		{"VirtualService (http[].timeout)", &networking.VirtualService{}, true},
		{"DestinationRule (connection pool timeouts)", &networking.DestinationRule{}, true},
		{"Gateway", &networking.Gateway{}, false},
		{"ServiceEntry", &networking.ServiceEntry{}, false},
		{"Struct (cyclic through Value)", &structpb.Struct{}, false},
	} {
		for range 2 { // computed, then cached
			if got := reachesDuration(tc.msg.ProtoReflect().Descriptor()); got != tc.want {
				t.Errorf("%s: reachesDuration = %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}
