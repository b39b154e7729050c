// Package grpctransport holds the HTTP/2 transport settings of an ADS
// server: its write buffers and receive windows. pilot-discovery and the
// benchmark's floor server both use them, so the two differ only in what
// they compute.
package grpctransport

import "google.golang.org/grpc"

// HTTP/2 receive windows; gRPC ignores values under 64 KiB.
const (
	streamWindowBytes = 64 << 10
	connWindowBytes   = 1 << 20
)

// writeBufferBytes is the size of a connection's shared write buffer.
const writeBufferBytes = 32 << 10

// ServerOptions are the transport options of an ADS server.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		// A shared write buffer is held only while a connection writes,
		// but a push wakes every connection at once and gRPC yields with
		// the buffer held when it has under 1,000 bytes to write (an
		// endpoint change), so under churn each of 500 connections held
		// one. gRPC's 32 KiB size: with 64 KiB the server's RSS under
		// endpoint churn was 47 MB higher, with 16 KiB file-mode CPU rose
		// by a fifth (more write syscalls for the large first configs).
		grpc.WriteBufferSize(writeBufferBytes), grpc.SharedWriteBuffer(true),
		// Static flow-control windows turn off gRPC's bandwidth estimator.
		// It answers data from a client, when no estimate is under way,
		// with a window update and a PING, so every ACK of a push cost a
		// second write and a second read on both sides. ADS clients send
		// small requests, and the stream window bounds what one may park
		// unread (the estimator grew it up to 16 MiB). A request larger
		// than the window still arrives whole: gRPC widens the window for
		// a message being read.
		grpc.InitialWindowSize(streamWindowBytes), grpc.InitialConnWindowSize(connWindowBytes),
	}
}
