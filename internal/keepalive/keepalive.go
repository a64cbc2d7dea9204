// Package keepalive sets up the relay's TCP connections so that the
// operating system drops one whose peer stopped answering, within a time
// the relay chooses, instead of the system default of two hours or more.
package keepalive

import (
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Dialer returns a dialer whose TCP connections send keepalive probes
// after half of within without traffic, then every sixth of it (at least a
// second): a peer that answers none of three probes is declared dead
// within about within. Probes only help where packets are lost; a proxy
// that is alive but hung answers them, which is why the relay also has
// timeouts of its own.
func Dialer(within time.Duration) *net.Dialer {
	return &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{
		Enable:   true,
		Idle:     within / 2,
		Interval: max(within/6, time.Second),
		Count:    3,
	}}
}

// PostgreSQL makes cfg's connections use [Dialer](within), and, unless the
// connection string set connect_timeout, gives up connecting after within.
func PostgreSQL(cfg *pgconn.Config, within time.Duration) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = within
	}
	d := Dialer(within)
	d.Timeout = cfg.ConnectTimeout
	cfg.DialFunc = d.DialContext
}
