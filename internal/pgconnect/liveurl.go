package pgconnect

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// LiveURL is the connection string of each new connection to PostgreSQL:
// the URL it was made with, or with a file (--postgres-url-file) the
// file's contents, read again at every new connection, so that a password
// rotated in the file needs no restart. A file that cannot be read, is
// empty or does not parse is said once per distinct problem, never with
// its contents, and the last connection string that parsed is used
// meanwhile. Safe for concurrent use.
type LiveURL struct {
	file string
	log  *slog.Logger

	mu      sync.Mutex
	good    string // the last connection string that parsed
	problem string // the problem last said; "" when the file is usable
}

// NewLiveURL returns the source of new connections' strings: url, the one
// the caller checked, read again from file at each Get when file is set;
// log says the file's problems.
func NewLiveURL(url, file string, log *slog.Logger) *LiveURL {
	return &LiveURL{file: file, log: log, good: url}
}

// Get returns the connection string for a new connection: the file's
// latest that parses, else the last one that did (at first the URL
// NewLiveURL was given).
func (u *LiveURL) Get() string {
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
