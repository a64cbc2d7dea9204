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

// GetN returns n loopback TCP ports that were free a moment ago, all
// different: each is held until the last is found, so that a server given
// several listeners never gets one port twice (which Get, called n times,
// may return once the first listener is closed).
func GetN(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
