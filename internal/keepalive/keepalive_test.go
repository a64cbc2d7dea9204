package keepalive

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestDialer(t *testing.T) {
	for _, tt := range []struct {
		within, idle, interval time.Duration
	}{
		{30 * time.Second, 15 * time.Second, 5 * time.Second},
		{5 * time.Second, 2500 * time.Millisecond, time.Second},
	} {
		ka := Dialer(tt.within).KeepAliveConfig
		if !ka.Enable || ka.Idle != tt.idle || ka.Interval != tt.interval || ka.Count != 3 {
			t.Errorf("Dialer(%s): %+v, want idle %s, interval %s, 3 probes", tt.within, ka, tt.idle, tt.interval)
		}
		if dead := ka.Idle + time.Duration(ka.Count)*ka.Interval; dead > tt.within+time.Second {
			t.Errorf("Dialer(%s) declares a peer dead after %s", tt.within, dead)
		}
	}
}

func TestPostgreSQLKeepsAConnectTimeoutOfTheURL(t *testing.T) {
	for url, want := range map[string]time.Duration{
		"postgres://u@h/db":                   30 * time.Second,
		"postgres://u@h/db?connect_timeout=7": 7 * time.Second,
	} {
		cfg, err := pgconn.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		PostgreSQL(cfg, 30*time.Second)
		if cfg.ConnectTimeout != want || cfg.DialFunc == nil {
			t.Errorf("%s: connect timeout %s, want %s", url, cfg.ConnectTimeout, want)
		}
	}
}

// TestPostgreSQLAsksTheServerToProbe: the server probes its end too, so a
// session whose client vanished releases what it holds within the time;
// a setting of the connection string wins.
func TestPostgreSQLAsksTheServerToProbe(t *testing.T) {
	cfg, err := pgconn.ParseConfig("postgres://u@h/db?tcp_keepalives_count=9")
	if err != nil {
		t.Fatal(err)
	}
	PostgreSQL(cfg, 30*time.Second)
	want := map[string]string{"tcp_keepalives_idle": "15", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "9", "tcp_user_timeout": "30000"}
	for name, v := range want {
		if got := cfg.RuntimeParams[name]; got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
}
