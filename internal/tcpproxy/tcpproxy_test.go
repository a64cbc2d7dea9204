package tcpproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/tcpproxy"
)

// echoServer echoes each line back on every connection, and passes each
// accepted connection to conns.
func echoServer(t *testing.T) (addr string, conns chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conns = make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			conns <- c
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	return l.Addr().String(), conns
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a line on c and returns the reply, or the read error
// after wait.
func roundTrip(c net.Conn, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	return bufio.NewReader(c).ReadString('\n')
}

// quiet is how long a silent connection is watched for a sign of life.
const quiet = 300 * time.Millisecond

func TestSilence(t *testing.T) {
	target, serverConns := echoServer(t)
	p, err := tcpproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	old := dial(t, p.Addr())
	if got, err := roundTrip(old, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("before the silence: %q, %v", got, err)
	}
	oldServer := <-serverConns
	if n := p.Silence(); n != 1 {
		t.Fatalf("Silence silenced %d connections, want 1", n)
	}

	// The old connection stays open and says nothing: a timeout, not an
	// end of stream or a reset.
	if got, err := roundTrip(old, quiet); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent connection answered %q, %v; want a read timeout", got, err)
	}
	// Closing one end is not passed on to the other.
	old.Close()
	_ = oldServer.SetReadDeadline(time.Now().Add(quiet))
	if _, err := oldServer.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the target saw %v after the client closed a silent connection; want nothing", err)
	}

	// A new connection is forwarded.
	fresh := dial(t, p.Addr())
	if got, err := roundTrip(fresh, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("a connection after the silence: %q, %v", got, err)
	}
}

func TestCloseEndsSilentConnections(t *testing.T) {
	target, _ := echoServer(t)
	p, err := tcpproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Silence()
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a silent connection open")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) || err == nil {
		t.Fatalf("after Close the client's connection is still open (%v)", err)
	}
}
