package pgtemp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// fakeBin makes dir/bin with empty executables named as given and returns
// the bin directory.
func fakeBin(t *testing.T, dir string, names ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(bin, n), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestFindBinHonoursTheAskedVersion(t *testing.T) {
	cache := t.TempDir()
	old := fakeBin(t, filepath.Join(cache, "postgres-17.9.0"), serverBinaries...)
	newest := fakeBin(t, filepath.Join(cache, "postgres-17.11.0"), serverBinaries...)
	fakeBin(t, filepath.Join(cache, "postgres-17.12.0"), "initdb", "pg_ctl") // no postgres: not used
	fakeBin(t, filepath.Join(cache, "postgres-16.15.0"), serverBinaries...)
	partial := fakeBin(t, t.TempDir(), "initdb")
	debian15 := "/usr/lib/postgresql/15/bin"
	if hasServer(debian15) != nil {
		debian15 = "" // not installed here: the case is skipped
	}
	t.Setenv(CacheEnv, cache)
	t.Setenv("PG_BINDIR", "/nowhere")

	for _, tc := range []struct {
		name, value string
		want        string // the bin directory, or "" for an error
		wantErr     string // what the error says
	}{
		{"newest release of a major", "17", newest, ""},
		{"a bin directory", old, old, ""},
		{"a bin directory lacking binaries", partial, "", "no pg_ctl, postgres in " + partial},
		{"a major never fetched", "99", "", "scripts/pgversion.sh 99"},
		{"not a version", "latest", "", "want a major version"},
		{"Debian's own", "15", debian15, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.value == "15" && debian15 == "" {
				t.Skip("Debian's PostgreSQL 15 is not installed")
			}
			t.Setenv(VersionEnv, tc.value)
			got, err := FindBin()
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("FindBin() = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("FindBin() = %q, %v; want an error saying %q", got, err, tc.wantErr)
			}
		})
	}
}

// TestFindBinUnsetIsAsBefore checks that without CDC_RELAY_TEST_PG the
// lookup starts with PG_BINDIR, as `cdc-relay demo` always had it.
func TestFindBinUnsetIsAsBefore(t *testing.T) {
	t.Setenv(VersionEnv, "")
	t.Setenv("PG_BINDIR", "/some/bin")
	if got, err := FindBin(); err != nil || got != "/some/bin" {
		t.Fatalf("FindBin() = %q, %v; want PG_BINDIR", got, err)
	}
}

// TestStartExplainsUnreachableBinaries runs as root only: the cluster then
// runs as the postgres user, which cannot reach binaries under a directory
// only root may search; Start must say so and what to do.
func TestStartExplainsUnreachableBinaries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the cluster as another user")
	}
	bin, err := FindBin()
	if err != nil {
		t.Skip(err)
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(private, "bin")
	if err := os.Symlink(bin, fake); err != nil {
		t.Fatal(err)
	}
	t.Setenv(VersionEnv, fake)
	_, err = Start(context.Background(), Options{})
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "cannot run "+fake) {
		t.Fatalf("Start from %s = %v; want it to say the postgres user cannot run it", fake, err)
	}
}

// TestStartRunsTheAskedVersion checks, when CDC_RELAY_TEST_PG names a
// major version, that the cluster Start makes runs that version.
func TestStartRunsTheAskedVersion(t *testing.T) {
	want, err := strconv.Atoi(os.Getenv(VersionEnv))
	if err != nil {
		t.Skipf("%s names no major version", VersionEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	if num/10000 != want {
		t.Fatalf("server_version_num %d; %s=%d", num, VersionEnv, want)
	}
}
