// Package freeport finds free loopback TCP ports for the throwaway servers
// of the demo, the tests and the benchmarks.
package freeport

import "net"

// Get returns a loopback TCP port that was free a moment ago. Another
// process may take it before the caller binds it; callers that start a
// server on it should fail loudly rather than retry silently.
func Get() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
