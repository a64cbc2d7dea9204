package admin

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Sign-in attempts are limited per address, so that the token cannot be
// guessed at the speed of the network: signInBurst wrong tokens in a
// row, then one more every signInEvery.
const (
	signInBurst = 5
	signInEvery = 10 * time.Second
	// signInAddrs bounds the addresses remembered: past it, the oldest
	// state is forgotten (all of it), which an attacker with that many
	// addresses gains little from.
	signInAddrs = 4096
)

// signInLimiter keeps, for each address that gave a wrong token, when its
// next attempt may come: a bucket of signInBurst attempts that refills
// one every signInEvery. It is safe for concurrent use.
type signInLimiter struct {
	mu   sync.Mutex
	next map[string]time.Time // the time the bucket is full again, by address
}

// allow reports whether req's address may try a token now, and if not,
// how long it must wait.
func (l *signInLimiter) allow(req *http.Request, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	full, ok := l.next[addrOf(req)]
	if !ok || !full.After(now) {
		return true, 0
	}
	// full - now is how much of the bucket is spent, in signInEvery.
	if spent := full.Sub(now); spent > (signInBurst-1)*signInEvery {
		return false, spent - (signInBurst-1)*signInEvery
	}
	return true, 0
}

// failed spends one attempt of req's address.
func (l *signInLimiter) failed(req *http.Request, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next == nil || len(l.next) >= signInAddrs {
		l.next = map[string]time.Time{}
	}
	a := addrOf(req)
	full := l.next[a]
	if full.Before(now) {
		full = now
	}
	l.next[a] = full.Add(signInEvery)
}

// addrOf is the host of req's remote address (its port dropped).
func addrOf(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}
