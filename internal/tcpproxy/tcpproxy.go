// Package tcpproxy is a TCP proxy for tests that break the network for
// real. It forwards each connection to a target, and [Proxy.Silence] makes
// the connections open at that moment go silent: nothing more is forwarded
// either way, yet every socket stays open, so neither end sees an error or
// an end of stream. That is how a hung proxy, or a network partition that
// drops packets, looks to both ends.
package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards the connections it accepts on a loopback port to a
// target address. It is safe for concurrent use.
type Proxy struct {
	target string
	l      net.Listener
	done   chan struct{} // closed by Close

	mu     sync.Mutex
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

// link is one proxied connection: the client's socket and the target's.
type link struct {
	client, server net.Conn
	silent         atomic.Bool
}

// Start listens on a free loopback port and forwards every connection to
// target (host:port) until Close.
func Start(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen: %w", err)
	}
	p := &Proxy{target: target, l: l, done: make(chan struct{}), links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, host:port: connect there instead of to the
// target.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Silence makes every connection open now silent for good: what either end
// sends afterwards is neither forwarded nor read (so its sender's buffers
// fill up), and no socket is closed, not even when one end closes its own,
// until [Proxy.Close]. Connections accepted later are forwarded as usual.
// It returns how many connections went silent.
func (p *Proxy) Silence() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for lk := range p.links {
		if !lk.silent.Swap(true) {
			n++
		}
	}
	return n
}

// Close stops accepting, closes every socket, silent or not, and waits for
// the proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	err := p.l.Close()
	for lk := range p.links {
		lk.client.Close()
		lk.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		lk := &link{client: client, server: server}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.links[lk] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.forward(lk, client, server)
		go p.forward(lk, server, client)
	}
}

// forward copies src to dst until either fails or the link goes silent.
// A failure closes both sockets, as a working proxy does; a silent link
// stops reading and closes nothing until the proxy is closed.
func (p *Proxy) forward(lk *link, src, dst net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if lk.silent.Load() {
			<-p.done // what was read is dropped, and nothing more is read
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if lk.silent.Load() {
				<-p.done
				return
			}
			if !errors.Is(err, net.ErrClosed) {
				src.Close()
				dst.Close()
			}
			p.mu.Lock()
			delete(p.links, lk)
			p.mu.Unlock()
			return
		}
	}
}
