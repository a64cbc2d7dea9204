package relay

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// liveURL is the connection string of each new connection to PostgreSQL:
// Config.PostgresURL, or with Config.PostgresURLFile the file's contents,
// read again at every new connection, so that a password rotated in the
// file needs no restart. A file that cannot be read, is empty or does not
// parse is said once per distinct problem, never with its contents, and
// the last connection string that parsed is used meanwhile. Safe for
// concurrent use.
type liveURL struct {
	file string
	log  *slog.Logger

	mu      sync.Mutex
	good    string // the last connection string that parsed
	problem string // the problem last said; "" when the file is usable
}

// newLiveURL returns the source of cfg's connection string; url is the
// one New checked.
func newLiveURL(cfg Config) *liveURL {
	return &liveURL{file: cfg.PostgresURLFile, log: cfg.Logger, good: cfg.PostgresURL}
}

// get returns the connection string for a new connection.
func (u *liveURL) get() string {
	if u.file == "" {
		return u.good
	}
	s, err := readURLFile(u.file)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != u.problem {
			u.problem = msg
			u.log.Warn("--postgres-url-file holds no usable connection string: new connections use the one it held before; fix the file",
				"file", u.file, "err", msg)
		}
		return u.good
	}
	if u.problem != "" {
		u.problem = ""
		u.log.Info("--postgres-url-file holds a usable connection string again", "file", u.file, "url", pgerr.Describe(s))
	}
	u.good = s
	return s
}

// readURLFile returns the trimmed connection string in file, or why it
// holds none; the error never holds the file's contents.
func readURLFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", file)
	}
	if _, err := pgxpool.ParseConfig(s); err != nil {
		return "", fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	return s, nil
}

// postgresURL returns the connection string of a new connection: the
// file's latest (liveURL) in a relay made by New, else PostgresURL.
func (c Config) postgresURL() string {
	if c.liveURL == nil {
		return c.PostgresURL
	}
	return c.liveURL.get()
}
