package main

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// TestDebugServerHidesTheCommandLine: --debug-addr serves the profiles,
// but not /debug/pprof/cmdline, which would show a --postgres-url with its
// password to anyone who can reach the port.
func TestDebugServerHidesTheCommandLine(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := debugServer(fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tt := range []struct {
		path string
		code int
	}{
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof/heap", http.StatusOK},
		{"/debug/pprof/cmdline", http.StatusNotFound},
	} {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("GET %s: %s, want %d", tt.path, resp.Status, tt.code)
		}
	}
}
