package pgtemp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// VersionEnv names the environment variable that picks the PostgreSQL the
// clusters run: a major version ("13" to "18") or the path of a bin
// directory holding initdb, pg_ctl and postgres. Set, it takes precedence
// over PG_BINDIR; unset, [FindBin] looks where it always did.
const VersionEnv = "CDC_RELAY_TEST_PG"

// CacheEnv names the environment variable that overrides [CacheDir].
const CacheEnv = "CDC_RELAY_PG_CACHE"

// serverBinaries are what a cluster runs; a bin directory without one of
// them is not used.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// CacheDir is where scripts/pgversion.sh unpacks the PostgreSQL versions it
// fetches, and where a major version in [VersionEnv] is looked up: CacheEnv
// when set; as root /var/cache/cdc-relay/postgres, which the "postgres"
// user running the clusters can reach (a repository under /root is not);
// otherwise internal/pgtemp/.cache in the source tree, which git ignores.
// The script computes the same directory.
func CacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/cdc-relay/postgres"
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), ".cache")
}

// versionBin returns the bin directory that v, the value of VersionEnv,
// names, or an error that says how to get it.
func versionBin(v string) (string, error) {
	if strings.ContainsRune(v, os.PathSeparator) {
		if err := hasServer(v); err != nil {
			return "", fmt.Errorf("%s=%s: %w: point it at PostgreSQL's bin directory, or name a major version (13 to 18)", VersionEnv, v, err)
		}
		return v, nil
	}
	major, err := strconv.Atoi(v)
	if err != nil || major < 10 {
		return "", fmt.Errorf("%s=%q: want a major version (13 to 18) or the path of PostgreSQL's bin directory", VersionEnv, v)
	}
	if d := filepath.Join("/usr/lib/postgresql", v, "bin"); hasServer(d) == nil {
		return d, nil
	}
	if d := newestCached(CacheDir(), major); d != "" {
		return d, nil
	}
	return "", fmt.Errorf("PostgreSQL %d (%s=%s) is neither in /usr/lib/postgresql/%d nor in %s: "+
		"fetch it with `scripts/pgversion.sh %d` (Maven; or `make test-pg PG=%d`), or set %s to a bin directory",
		major, VersionEnv, v, major, CacheDir(), major, major, VersionEnv)
}

// hasServer reports which of initdb, pg_ctl and postgres dir lacks.
func hasServer(dir string) error {
	var missing []string
	for _, name := range serverBinaries {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no %s in %s", strings.Join(missing, ", "), dir)
	}
	return nil
}

// newestCached returns the bin directory of the newest release of major
// unpacked in cache (as postgres-<major>.<minor>.<patch>), or "".
func newestCached(cache string, major int) string {
	matches, _ := filepath.Glob(filepath.Join(cache, fmt.Sprintf("postgres-%d.*", major), "bin"))
	var dirs []string
	for _, m := range matches {
		if hasServer(m) == nil {
			dirs = append(dirs, m)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return releaseLess(dirs[j], dirs[i]) })
	if len(dirs) == 0 {
		return ""
	}
	return dirs[0]
}

// releaseLess orders two cached bin directories by their release numbers.
func releaseLess(a, b string) bool {
	na, nb := releaseNumbers(a), releaseNumbers(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		if na[i] != nb[i] {
			return na[i] < nb[i]
		}
	}
	return len(na) < len(nb)
}

func releaseNumbers(bin string) []int {
	name := strings.TrimPrefix(filepath.Base(filepath.Dir(bin)), "postgres-")
	var n []int
	for _, f := range strings.Split(name, ".") {
		v, _ := strconv.Atoi(f)
		n = append(n, v)
	}
	return n
}

// explainPermission adds what to do to err when it is the cluster's owner,
// the "postgres" user of a root process, that may not run the binaries.
func (c *Cluster) explainPermission(err error) error {
	if c.cred == nil || !errors.Is(err, os.ErrPermission) {
		return err
	}
	return fmt.Errorf("%w\nrunning as root, the cluster runs as the \"postgres\" user, which cannot run %s: "+
		"every directory above it must be readable and searchable by others (a repository under /root is not); "+
		"`scripts/pgversion.sh` run as root unpacks the versions it fetches into /var/cache/cdc-relay/postgres", err, c.bin)
}
