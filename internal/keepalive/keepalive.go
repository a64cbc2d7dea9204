// Package keepalive sets up the relay's TCP connections so that the
// operating system drops one whose peer stopped answering, within a time
// the relay chooses, instead of the system default of two hours or more.
package keepalive

import (
	"net"
	"strconv"
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
// It asks the server to probe its end the same way (tcp_keepalives_*,
// tcp_user_timeout, unless the connection string sets them): a session
// whose client vanished without a word (a power loss, a partition) would
// otherwise keep what it holds, such as the relay's leadership lock, for
// the server's system default of two hours or more.
func PostgreSQL(cfg *pgconn.Config, within time.Duration) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = within
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	secs := func(d time.Duration) string { return strconv.Itoa(max(int(d/time.Second), 1)) }
	for name, value := range map[string]string{
		"tcp_keepalives_idle":     secs(within / 2),
		"tcp_keepalives_interval": secs(within / 6),
		"tcp_keepalives_count":    "3",
		"tcp_user_timeout":        strconv.Itoa(int(within / time.Millisecond)),
	} {
		if _, set := cfg.RuntimeParams[name]; !set {
			cfg.RuntimeParams[name] = value
		}
	}
	d := Dialer(within)
	d.Timeout = cfg.ConnectTimeout
	cfg.DialFunc = d.DialContext
}
