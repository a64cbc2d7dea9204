package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/relay"
)

// configUsage is the --config flag's help, the same for every command.
const configUsage = "a YAML config `file`: the outbox tables, each with its mapping, the message prefixes to relay (messages:), and the top-level settings " +
	"(postgres_url, kafka.brokers, kafka.compression, kafka.batch_max_bytes, slot, publication, …); a flag or environment variable overrides the file's setting"

// registerConfig registers --config on fs.
func registerConfig(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "config", "", configUsage)
}

// mappingFlags map the one table of the command line; a config file maps
// its tables itself, and either may be used, not both.
var mappingFlags = []string{
	"table", "topic-template", "topic-column", "key-column", "payload-column", "id-column",
	"header-columns", "headers-column", "timestamp-column", "timestamp-unit",
}

// loadConfig loads the config file at path, if any, after fs was parsed.
// Each of the file's top-level settings becomes the value of its flag
// where fs has the flag and it was not set, on the command line or from
// the environment: flags and environment variables override the file. A
// mapping flag set beside the file is a usage error, which names the
// environment variable when the flag came from there. It returns nil
// without a path.
func loadConfig(fs *flag.FlagSet, path string) (*config.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, name := range mappingFlags {
		if !set[name] || fs.Lookup(name) == nil {
			continue
		}
		if setInEnvironment(fs, name) {
			return nil, usageError{fmt.Sprintf("%s is set in the environment, and --%s maps the one table of the command line; with --config, map the tables in %s and unset %s (or leave out --config)",
				envName(name), name, path, envName(name))}
		}
		return nil, usageError{fmt.Sprintf("--%s maps the one table of the command line; with --config, map the tables in %s (or leave out --config)", name, path)}
	}
	url := f.PostgresURL
	if set["postgres-url-file"] {
		url = "" // the file of the flag wins over the config's URL
	}
	for _, s := range []struct{ flag, value string }{
		{"postgres-url", url},
		{"kafka-brokers", strings.Join(f.Kafka.Brokers, ",")},
		{"kafka-compression", f.Kafka.Compression},
		{"kafka-batch-max-bytes", batchBytesText(f.Kafka.BatchMaxBytes)},
		{"slot", f.Slot},
		{"publication", f.Publication},
		{"status-table", f.StatusTable},
		{"checkpoint-table", f.CheckpointTable},
		{"allowed-topics", f.AllowedTopics},
		{"ordering", f.Ordering},
	} {
		if s.value == "" || set[s.flag] || fs.Lookup(s.flag) == nil {
			continue
		}
		if err := fs.Set(s.flag, s.value); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, s.flag, err)
		}
	}
	return f, nil
}

// warnConfig logs each of the config file's warnings: what it accepts but
// is usually a mistake.
func warnConfig(file *config.File, log *slog.Logger) {
	for _, w := range file.Warnings {
		log.Warn("config file: " + w.Error())
	}
}

// checkAtStart checks the config file's tables against the database as
// check-config does, so that a column the file names but the table lacks
// stops run at start, naming the column and the table, rather than when
// the first row arrives. A database that does not answer is left to the
// relay, which waits for it.
func checkAtStart(ctx context.Context, rc relay.Config, path string, file *config.File, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	conn, err := openSampleConn(ctx, rc.PostgresURL)
	if err != nil {
		log.Warn("could not check the config file's tables against the database", "err", err)
		return nil
	}
	defer conn.Close(context.Background())
	names := preflight.Names{Publication: rc.Publication, StatusSchema: rc.StatusSchema, StatusTable: rc.StatusTable, ConfigPath: path}
	problems, err := preflight.CheckTables(ctx, conn, names, file.Tables)
	if err != nil {
		log.Warn("could not check the config file's tables against the database", "err", err)
		return nil
	}
	if len(problems) == 0 {
		return nil
	}
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = "  " + p.String()
	}
	return fmt.Errorf("%s does not fit the database (`cdc-relay check-config --config %s` says the same):\n%s", path, path, strings.Join(lines, "\n"))
}

// configSources sets rc's tables and message sources to the config
// file's: a file of messages only leaves rc with no table. allowedTopics
// (the flag's value, or the file's) applies to every table, and to every
// message source that sets no allowed_topics of its own.
func configSources(rc *relay.Config, f *config.File, allowedTopics string) {
	rc.Tables = configTables(f, allowedTopics)
	rc.Messages = configMessages(f, allowedTopics)
	rc.Publishers = nil
	for _, p := range f.Publishers {
		if p.Webhook != nil {
			rc.Publishers = append(rc.Publishers, relay.Publisher{Name: p.Name, Webhook: *p.Webhook})
		}
	}
}

// configMessages returns the message sources of a config file, in its
// order, each with its own allowed_topics, else allowedTopics; nil when
// the file has none.
func configMessages(f *config.File, allowedTopics string) []decoder.MessageMapping {
	var ms []decoder.MessageMapping
	for _, m := range f.Messages {
		if m.AllowedTopics == "" {
			m.AllowedTopics = allowedTopics
		}
		ms = append(ms, m)
	}
	return ms
}

// configTables returns the relay's tables from a config file, each a copy
// of the file's with allowedTopics (the flag's value, or the file's).
func configTables(f *config.File, allowedTopics string) []outbox.Table {
	tables := make([]outbox.Table, len(f.Tables))
	for i, t := range f.Tables {
		tables[i] = t.Clone()
		tables[i].Mapping.AllowedTopics = allowedTopics
	}
	return tables
}
