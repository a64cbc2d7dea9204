// Package pgtemp runs a throwaway PostgreSQL cluster from the system's
// binaries (initdb, pg_ctl) in a temporary directory on a free loopback
// port, for `cdc-relay demo` and the tests.
//
// CDC_RELAY_TEST_PG picks another server version for the tests: a major
// version that scripts/pgversion.sh fetched, or a bin directory
// (version.go).
//
// The cluster runs with wal_level=logical (or as Options say), trusts local
// connections, and is removed by Stop. initdb refuses to run as root, so
// when the process is root the cluster runs as the "postgres" system user.
// [Cluster.StartStandby] makes a streaming standby of a running cluster,
// for failover tests.
package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// Options configures a cluster. The zero value is a logical-replication
// cluster.
type Options struct {
	// WALLevel is wal_level; default "logical".
	WALLevel string
	// Settings are more postgresql.conf settings, written after (and so
	// over) pgtemp's own; a value is written as it is, so quote strings.
	Settings map[string]string
}

// Cluster is a running temporary cluster.
type Cluster struct {
	dir     string
	bin     string
	port    int
	cred    *syscall.Credential
	logFile string
	opts    Options
}

// FindBin returns the directory holding initdb and pg_ctl: the version
// CDC_RELAY_TEST_PG names (see [VersionEnv]), else PG_BINDIR, then Debian's
// /usr/lib/postgresql/<newest>/bin, then $PATH.
func FindBin() (string, error) {
	if v := os.Getenv(VersionEnv); v != "" {
		return versionBin(v)
	}
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found: install them " +
		"(Debian: apt-get install postgresql) or set PG_BINDIR, or CDC_RELAY_TEST_PG to a version that scripts/pgversion.sh fetched")
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Start creates and starts a cluster.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	if opts.WALLevel == "" {
		opts.WALLevel = "logical"
	}
	c := &Cluster{bin: bin, opts: opts}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, and initdb refuses root: need the \"postgres\" user (it comes with Debian's postgresql package): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	c.dir, err = os.MkdirTemp("", "cdc-relay-pg-")
	if err != nil {
		return nil, err
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			c.remove()
			return nil, err
		}
	}
	c.logFile = filepath.Join(c.dir, "postgres.log")
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		c.remove()
		return nil, c.explainPermission(err)
	}
	if err := c.configure(); err != nil {
		c.remove()
		return nil, err
	}
	// pg_ctl start is not cancelled with ctx: killed after it forked the
	// postmaster, it would leave a server running on a deleted directory.
	// It runs to the end (bounded by its own -t), then a cancelled start
	// stops the server again.
	if err := c.start(context.WithoutCancel(ctx)); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) configure() error {
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	c.port = port
	settings := map[string]string{
		"wal_level":               c.opts.WALLevel,
		"port":                    strconv.Itoa(port),
		"listen_addresses":        "'127.0.0.1'",
		"unix_socket_directories": "'" + c.dir + "'",
		"max_wal_senders":         "20",
		"max_replication_slots":   "20",
		"max_connections":         "100",
		"fsync":                   "off",
		"full_page_writes":        "off",
		"shared_buffers":          "128MB",
		"max_wal_size":            "1GB",
		"log_min_messages":        "warning",
	}
	for k, v := range c.opts.Settings {
		settings[k] = v
	}
	return c.appendConf("cdc-relay pgtemp", settings)
}

// appendConf appends settings to c's postgresql.conf under a comment
// heading, where they override what came before; a reload or restart
// applies them.
func (c *Cluster) appendConf(heading string, settings map[string]string) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# " + heading + "\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, settings[k])
	}
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (c *Cluster) start(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-l", c.logFile, "-w", "-t", "60", "start")
}

// run runs a PostgreSQL binary as the cluster's owner.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// A process group of its own: a Ctrl-C or SIGHUP at the terminal
	// reaches the caller, which stops the cluster, not the server directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	// Cancelled, the whole group goes (initdb runs children of its own).
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(c.logFile)
		return fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out, tail(log, 2000))
	}
	return nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// URL is a connection URL for database db as the superuser "postgres".
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Restart stops the server (mode "fast" or "immediate") and starts it
// again on the same port with its data.
func (c *Cluster) Restart(ctx context.Context, mode string) error {
	if err := c.run(ctx, "pg_ctl", "-D", c.data(), "-m", mode, "-w", "stop"); err != nil {
		return err
	}
	return c.start(ctx)
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
	c.remove()
	return err
}

func (c *Cluster) remove() { _ = os.RemoveAll(c.dir) }
