package kube

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// The secure ADS port (TLS, ServiceAccount tokens checked by TokenReview)
// puts each stream's verified identity in its context. Until these tests
// reach it with real tokens, this interceptor stands in for it: a stream
// carrying "x-test-identity: NAMESPACE/SERVICEACCOUNT" is taken to have
// proved that identity. Streams without it are unauthenticated.
const testIdentityHeader = "x-test-identity"

func testIdentityInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	if v := md.Get(testIdentityHeader); len(v) == 1 {
		ns, sa, _ := strings.Cut(v[0], "/")
		ctx := model.WithIdentity(ss.Context(), &model.Identity{Namespace: ns, ServiceAccount: sa, Method: model.MethodToken})
		return handler(srv, identityStream{ss, ctx})
	}
	return handler(srv, ss)
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s identityStream) Context() context.Context { return s.ctx }

// asIdentity makes a client's streams carry identity "NAMESPACE/SA".
func asIdentity(identity string) grpc.DialOption {
	return grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(metadata.AppendToOutgoingContext(ctx, testIdentityHeader, identity), desc, cc, method, opts...)
	})
}
