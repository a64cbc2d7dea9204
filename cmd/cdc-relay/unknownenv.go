package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/suggest"
)

// envPrefix begins every environment variable the relay reads.
const envPrefix = "CDC_RELAY_"

// testEnvPrefix begins the variables of the repository's own tests
// (CDC_RELAY_TEST_KAFKA=apache, say), which a developer may keep exported:
// no command reads them, and none is warned about.
const testEnvPrefix = envPrefix + "TEST_"

// otherEnv are the CDC_RELAY_ variables read other than as a flag: the
// Kafka SASL password, and the PostgreSQL that `demo` runs (the one its
// throwaway cluster's binaries come from, and where they are cached).
var otherEnv = []string{kafkaSASLPasswordEnv, pgtemp.VersionEnv, pgtemp.CacheEnv}

// allFlagSets are the flag sets of every command, and of each subcommand
// of failed and config: a variable any of them reads is known to every command,
// so one environment can serve run, migrate and failed alike.
func allFlagSets() []*flag.FlagSet {
	sets := []*flag.FlagSet{
		(&MigrateCommand{}).flags(), (&RunCommand{}).flags(), (&StatusCommand{}).flags(),
		(&PauseCommand{}).flags(), (&PauseCommand{resume: true}).flags(), (&RecoverCommand{}).flags(),
		(&CheckConfigCommand{}).flags(), (&DemoCommand{}).flags(), (&BackfillCommand{}).flags(),
	}
	for _, sub := range failedSubcommands {
		sets = append(sets, (&FailedCommand{}).flags(sub))
	}
	for _, sub := range configSubcommands {
		sets = append(sets, (&ConfigCommand{}).flags(sub))
	}
	return sets
}

// knownEnv returns the variables of every flag in sets, and otherEnv. A
// command-line-only flag's counts too: it names a flag, which says, when
// given, that it is not read from the environment.
func knownEnv(sets []*flag.FlagSet) []string {
	known := slices.Clone(otherEnv)
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) {
			if name := envName(f.Name); !slices.Contains(known, name) {
				known = append(known, name)
			}
		})
	}
	return known
}

// unknownEnv returns a warning for each CDC_RELAY_ variable in environ
// ("NAME=value" each) that is not known, in environ's order, with the
// variable it most likely meant. A value is never printed: it may be a
// secret.
func unknownEnv(environ []string, known []string) []string {
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || strings.HasPrefix(name, testEnvPrefix) || slices.Contains(known, name) {
			continue
		}
		w := fmt.Sprintf("unknown environment variable %s: no flag reads it", name)
		if s := nearestEnv(name, known); s != "" {
			w += "; did you mean " + s + "?"
		}
		warnings = append(warnings, w)
	}
	return warnings
}

// nearestEnv is the known variable name most likely meant: the nearest by
// edit distance (CDC_RELAY_SLOTT: CDC_RELAY_SLOT), else the longest
// that name extends by words (CDC_RELAY_DELIVERY_MODE:
// CDC_RELAY_DELIVERY).
func nearestEnv(name string, known []string) string {
	short := make([]string, len(known))
	for i, k := range known {
		short[i] = strings.TrimPrefix(k, envPrefix)
	}
	if s := suggest.Closest(strings.TrimPrefix(strings.ToUpper(name), envPrefix), short); s != "" {
		return envPrefix + s
	}
	best := ""
	for _, k := range known {
		if strings.HasPrefix(name, k+"_") && len(k) > len(best) {
			best = k
		}
	}
	return best
}

// warnUnknownEnv writes to w, for command, a warning for each CDC_RELAY_
// variable in environ that no command reads: a misspelled variable is
// otherwise ignored without a word.
func warnUnknownEnv(w io.Writer, command string, environ []string) {
	for _, warning := range unknownEnv(environ, knownEnv(allFlagSets())) {
		fmt.Fprintf(w, "cdc-relay %s: warning: %s\n", command, warning)
	}
}

// logUnknownEnv is warnUnknownEnv of the process's environment for
// `run`, through its logger, so that a JSON log stays JSON.
func logUnknownEnv(log *slog.Logger) {
	for _, warning := range unknownEnv(os.Environ(), knownEnv(allFlagSets())) {
		log.Warn(warning)
	}
}
