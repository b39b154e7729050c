package xds

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// testIdentityHeader carries "NAMESPACE/SERVICEACCOUNT" from a test client
// to testIdentityInterceptor, which stands in for the secure port's
// authenticating interceptor: a stream without it is unauthenticated.
const testIdentityHeader = "x-test-identity"

func testIdentityInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
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

// withIdentity makes a test client's streams authenticate as ns/sa.
func withIdentity(ns, sa string) grpc.DialOption {
	return grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(metadata.AppendToOutgoingContext(ctx, testIdentityHeader, ns+"/"+sa), desc, cc, method, opts...)
	})
}
