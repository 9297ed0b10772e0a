package testkit

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback host:port that is free now, for a server a
// test must name before it starts (a pinned host, a signed URL).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
