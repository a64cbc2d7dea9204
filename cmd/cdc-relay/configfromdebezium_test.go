package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/internal/goldentest"
)

// debeziumGoldenRegen rewrites the golden files of
// TestConfigFromDebeziumGolden.
const debeziumGoldenRegen = "go test ./cmd/cdc-relay/ -run TestConfigFromDebeziumGolden -update"

// TestConfigFromDebeziumGolden runs `config from-debezium` on each
// connector config of testdata/debezium (SOURCES.md says where each comes
// from) and compares its standard output and error with
// testdata/debezium/golden/NAME.stdout and .stderr; -update rewrites them.
// A printed relay.yaml must parse with the relay's own parser, every
// property of the input must be named on one of the two, and no secret's
// value may be on either.
func TestConfigFromDebeziumGolden(t *testing.T) {
	tests := []struct {
		name  string   // of the golden files
		input string   // under testdata/debezium
		args  []string // before the file
		code  int
		// unknownKeys are relay.yaml keys this worktree's parser does not
		// know yet: a parse that fails on them alone passes.
		unknownKeys []string
	}{
		// Modelled on debezium-examples' connectors, which set no
		// plugin.name: decoderbufs, which the relay cannot take over; with
		// --slot, the relay's own.
		{name: "outbox", input: "outbox-example.json", code: 1},
		{name: "outbox-own-slot", input: "outbox-example.json", args: []string{"--slot", "outbox_relay"}},
		{name: "saga", input: "saga-example.json", code: 1},
		{name: "saga-own-slot", input: "saga-example.json", args: []string{"--slot", "booking_relay", "--publication", "booking_outbox"}},
		{name: "mongodb", input: "mongodb-example.json", code: 1},
		// The repository's own: the harness's connector with JSON
		// converters and a field in the envelope; every router property;
		// what cannot be honoured.
		{name: "harness-json-envelope", input: "harness-json-envelope.json"},
		{name: "every-router-property", input: "every-router-property.json"},
		{name: "avro-with-predicate", input: "avro-with-predicate.json"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			input := filepath.Join("testdata", "debezium", tt.input)
			args := append(append([]string{"config", "from-debezium"}, tt.args...), filepath.ToSlash(input))
			var stdout, stderr bytes.Buffer
			if code := Main(context.Background(), args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr.String())
			}
			golden := "testdata/debezium/golden/" + tt.name
			goldentest.Check(t, ".", golden+".stdout", stdout.Bytes(), debeziumGoldenRegen)
			goldentest.Check(t, ".", golden+".stderr", stderr.Bytes(), debeziumGoldenRegen)

			data, err := os.ReadFile(input)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := parseConnectorJSON(tt.input, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range conn.keys {
				if v := conn.values[key]; isSecret(key) && v != "" && strings.Contains(stdout.String()+stderr.String(), v) {
					t.Errorf("the value of %s, a secret, is printed", key)
				}
			}
			if tt.code != 0 {
				if stdout.Len() > 0 {
					t.Errorf("exit %d with a relay.yaml on standard output", tt.code)
				}
				return
			}
			covered[tt.input] = true
			// The relay.yaml names the router's properties without the
			// transform's prefix, which its header says.
			var routerPrefix string
			for _, key := range conn.keys {
				if name, ok := strings.CutSuffix(key, ".type"); ok && strings.HasPrefix(name, "transforms.") && isClass(conn.values[key], eventRouterClass) {
					routerPrefix = name + "."
				}
			}
			for _, key := range conn.keys {
				short := strings.TrimPrefix(key, routerPrefix)
				if !namesProperty(stdout.String(), key) && !namesProperty(stdout.String(), short) && !namesProperty(stderr.String(), key) {
					t.Errorf("property %s is neither in the relay.yaml nor on standard error", key)
				}
			}
			checkGeneratedYAML(t, stdout.Bytes(), tt.unknownKeys)
		})
	}
	// Each connector config that makes a relay.yaml is checked for its
	// properties by one case at least.
	entries, err := os.ReadDir(filepath.Join("testdata", "debezium"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".json") && !covered[name] && name != "mongodb-example.json" {
			t.Errorf("testdata/debezium/%s has no case that makes a relay.yaml of it: add one", name)
		}
	}
}

// namesProperty reports whether text names property key: as a word,
// followed by =, a space, a comma, a colon, a semicolon or a parenthesis.
func namesProperty(text, key string) bool {
	return regexp.MustCompile(`(^|[\s,(#])` + regexp.QuoteMeta(key) + `([=\s,:;)]|$)`).MatchString(text)
}

// checkGeneratedYAML parses a printed relay.yaml with the relay's own
// parser: it must parse, but for problems of unknown keys among
// unknownKeys (keys not in this worktree's parser yet).
func checkGeneratedYAML(t *testing.T, yaml []byte, unknownKeys []string) {
	t.Helper()
	_, err := config.Parse("relay.yaml", yaml)
	if err == nil {
		return
	}
	var problems config.Problems
	if !errors.As(err, &problems) {
		t.Fatalf("the relay.yaml does not parse: %v", err)
	}
	unknown := regexp.MustCompile(`^unknown key "([a-z_]+)"`)
	var skipped []string
	for _, p := range problems {
		m := unknown.FindStringSubmatch(p.Msg)
		if m == nil || !slices.Contains(unknownKeys, m[1]) {
			t.Errorf("the relay.yaml does not parse: %v", p)
			continue
		}
		skipped = append(skipped, m[1])
	}
	if len(skipped) > 0 {
		t.Logf("parse check skipped: this worktree's parser does not know %s yet", strings.Join(slices.Compact(slices.Sorted(slices.Values(skipped))), ", "))
	}
}

// writeConnector writes a connector's JSON config into a new file and
// returns its path.
func writeConnector(t *testing.T, json string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "connector.json")
	if err := os.WriteFile(path, []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// connectorJSON is a connector's config with the outbox event router,
// pgoutput and one table, with extra's properties (a JSON object's
// members, after a comma) added or overriding.
func connectorJSON(extra string) string {
	base := `"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
	"database.hostname": "db", "database.user": "dbz", "database.password": "hunter2",
	"plugin.name": "pgoutput", "table.include.list": "public.outboxevent",
	"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter"`
	if extra != "" {
		base += ", " + extra
	}
	return "{" + base + "}"
}

// TestConfigFromDebeziumCases: the exit status of each kind of input and
// command line, and what the relay.yaml or the errors say.
func TestConfigFromDebeziumCases(t *testing.T) {
	tests := []struct {
		name   string
		json   string   // the connector's config; "" for no file written
		args   []string // after from-debezium; FILE is replaced by the file
		code   int
		stdout []string // each must be in it
		stderr []string // each must be in it
	}{
		{name: "defaults", json: connectorJSON(""), args: []string{"FILE"},
			stdout: []string{"slot: debezium ", "publication: dbz_publication ", "- table: public.outboxevent ", "id: id ", "key: aggregateid ",
				"value: payload ", `topic: "outbox.event.{aggregatetype}"`},
			stderr: []string{"database.password (value not shown)", "postgres://dbz@db"}},
		{name: "REST body", json: `{"name": "c1", "config": ` + connectorJSON("") + `, "tasks": [], "type": "source"}`, args: []string{"FILE"},
			stdout: []string{`connector "c1"`, "/connectors/c1 "}, stderr: []string{"tasks (beside config)", "type (beside config)"}},
		{name: "numbers and booleans", json: connectorJSON(`"tasks.max": 1, "transforms.outbox.route.tombstone.on.empty.payload": true`), args: []string{"FILE"},
			stdout: []string{"tombstone_on_empty_payload: true"}, stderr: []string{"tasks.max=1:"}},
		{name: "the router's properties", json: connectorJSON(`"transforms.outbox.table.field.event.key": "agg",
			"transforms.outbox.route.by.field": "kind", "transforms.outbox.route.topic.replacement": "events-${routedByValue}",
			"transforms.outbox.table.field.event.timestamp": "created_at"`), args: []string{"FILE"},
			stdout: []string{"key: agg ", `topic: "events-{kind}"`, "timestamp: created_at "}},
		{name: "JsonConverter with schemas", json: connectorJSON(`"value.converter": "JsonConverter", "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "FALSE"`),
			args: []string{"FILE"}, stdout: []string{"key_converter: json ", "value_converter: json-with-schema "}},
		{name: "ByteArrayConverter", json: connectorJSON(`"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"`),
			args: []string{"FILE"}, stdout: []string{"# value_converter: raw, the relay's default (the column's bytes): value.converter=org.apache.kafka.connect.converters.ByteArrayConverter"}},
		{name: "own slot and publication", json: connectorJSON(""), args: []string{"--slot", "relay_slot", "--publication", "relay_pub", "FILE"},
			stdout: []string{"slot: relay_slot ", "publication: relay_pub "}},
		{name: "standard input", args: []string{"-"}, stdout: []string{"slot: debezium "}},
		{name: "producer compression", json: connectorJSON(`"producer.override.compression.type": "lz4"`), args: []string{"FILE"},
			stdout: []string{"kafka: {compression: lz4}"}},
		{name: "some tables regular expressions", json: connectorJSON(`"table.include.list": "public.outbox, app\\.out.*"`), args: []string{"FILE"},
			stdout: []string{"- table: public.outbox "}, stderr: []string{`table.include.list=public.outbox, app\.out.*, of which app\.out.*: a regular expression`}},

		{name: "decoderbufs", json: connectorJSON(`"plugin.name": "decoderbufs"`), args: []string{"FILE"}, code: 1,
			stderr: []string{"plugin.name=decoderbufs: the relay reads pgoutput only", "--slot NAME"}},
		{name: "plugin.name unset", json: strings.Replace(connectorJSON(""), `"plugin.name": "pgoutput",`, "", 1), args: []string{"FILE"}, code: 1,
			stderr: []string{"plugin.name unset: Debezium's default, decoderbufs"}},
		{name: "decoderbufs on a slot of the relay's own", json: connectorJSON(`"plugin.name": "decoderbufs"`), args: []string{"--slot", "own", "FILE"},
			stdout: []string{"slot: own "}},
		{name: "not PostgreSQL", json: `{"connector.class": "io.debezium.connector.mysql.MySqlConnector"}`, args: []string{"FILE"}, code: 1,
			stderr: []string{"is not Debezium's PostgreSQL connector"}},
		{name: "no connector.class", json: `{"topic.prefix": "x"}`, args: []string{"FILE"}, code: 1, stderr: []string{"connector.class is not set"}},
		{name: "no transforms", json: connectorJSON(`"transforms": ""`), args: []string{"FILE"}, code: 1, stderr: []string{"the connector has no transforms"}},
		{name: "no router", json: connectorJSON(`"transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"`),
			args: []string{"FILE"}, code: 1, stderr: []string{"none of the connector's transforms (transforms=unwrap)"}},
		{name: "two routers", json: connectorJSON(`"transforms": "a,b", "transforms.a.type": "EventRouter", "transforms.b.type": "io.debezium.transforms.outbox.EventRouter"`),
			args: []string{"FILE"}, code: 1, stderr: []string{"has 2 outbox event routers (a, b)"}},
		{name: "no table list", json: strings.Replace(connectorJSON(""), `"table.include.list": "public.outboxevent",`, "", 1), args: []string{"FILE"}, code: 1,
			stderr: []string{"table.include.list is not set", "Name the outbox table"}},
		{name: "only regular expressions", json: connectorJSON(`"table.include.list": "public\\.outbox.*"`), args: []string{"FILE"}, code: 1,
			stderr: []string{`table.include.list=public\.outbox.*: a regular expression`}},
		{name: "a route.topic.regex", json: connectorJSON(`"transforms.outbox.route.topic.regex": "(?<routedByValue>[a-z]+)"`), args: []string{"FILE"}, code: 1,
			stderr: []string{"cannot apply a regular expression to the routed value"}},
		{name: "a group the regex lacks", json: connectorJSON(`"transforms.outbox.route.topic.replacement": "x.${other}"`), args: []string{"FILE"}, code: 1,
			stderr: []string{"names a group that route.topic.regex=(?<routedByValue>.*) does not have"}},
		{name: "a placement without its place", json: connectorJSON(`"transforms.outbox.table.fields.additional.placement": "type"`), args: []string{"FILE"}, code: 1,
			stderr: []string{`"type" is not column:placement`}},
		{name: "a slot name the relay refuses", json: connectorJSON(`"slot.name": "Debezium"`), args: []string{"FILE"}, code: 1,
			stderr: []string{`slot.name: replication slot name "Debezium" has 'D'`}},
		{name: "schemas.enable neither true nor false", json: connectorJSON(`"key.converter": "JsonConverter", "key.converter.schemas.enable": "maybe"`),
			args: []string{"FILE"}, code: 1, stderr: []string{"key.converter.schemas.enable=maybe: want true or false"}},
		{name: "not JSON", json: "connector.class=io.debezium.connector.postgresql.PostgresConnector", args: []string{"FILE"}, code: 1,
			stderr: []string{"not a connector's JSON config"}},
		{name: "a list", json: "[]", args: []string{"FILE"}, code: 1, stderr: []string{"the JSON is not an object"}},
		{name: "a value that is an object", json: connectorJSON(`"tasks.max": {"n": 1}`), args: []string{"FILE"}, code: 1,
			stderr: []string{`property "tasks.max": an object or a list`}},
		{name: "no such file", args: []string{"/nonexistent/connector.json"}, code: 1, stderr: []string{"read the connector's config"}},

		{name: "no file", args: nil, code: 2, stderr: []string{"want one FILE", "Run 'cdc-relay config -h'"}},
		{name: "two files", args: []string{"a.json", "b.json"}, code: 2, stderr: []string{"got 2 arguments"}},
		{name: "a bad --slot", json: connectorJSON(""), args: []string{"--slot", "Relay", "FILE"}, code: 2, stderr: []string{`--slot: replication slot name "Relay"`}},
		{name: "an unknown flag", args: []string{"--slott", "x", "FILE"}, code: 2, stderr: []string{"(did you mean --slot?)"}},
		{name: "help", args: []string{"-h"}, stdout: []string{"Usage: cdc-relay config from-debezium", "cdc-relay config from-debezium connector.json > relay.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			args := slices.Clone(tt.args)
			if tt.json != "" {
				path := writeConnector(t, tt.json)
				for i, a := range args {
					if a == "FILE" {
						args[i] = path
					}
				}
			}
			var stdout, stderr bytes.Buffer
			c := &ConfigCommand{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(connectorJSON(""))}
			code := runConfigCommand(c, append([]string{"from-debezium"}, args...), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), "hunter2") {
				t.Error("database.password's value is printed")
			}
			if tt.code == 0 && strings.HasPrefix(stdout.String(), "#") {
				checkGeneratedYAML(t, stdout.Bytes(), nil)
			}
		})
	}
}

// runConfigCommand runs c as Main runs a command, for a ConfigCommand
// with its own standard input, and returns the exit status.
func runConfigCommand(c *ConfigCommand, args []string, stdout, stderr *bytes.Buffer) int {
	err := c.Run(context.Background(), args)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		c.Usage(stdout)
		return 0
	case errors.As(err, &ue):
		stderr.WriteString("cdc-relay config: " + err.Error() + "\nRun 'cdc-relay config -h' for the flags.\n")
		return 2
	}
	stderr.WriteString("cdc-relay config: " + err.Error() + "\n")
	return 1
}

// TestRouteTopic: the router's route.topic.regex and
// route.topic.replacement as the relay's topic template, java.util.regex's
// replacement syntax read as the router reads it.
func TestRouteTopic(t *testing.T) {
	tests := []struct {
		regex, replacement string
		want               string // "" for an error
		err                string
	}{
		{regex: defaultRouteTopicRegex, replacement: "outbox.event.${routedByValue}", want: "outbox.event.{aggregatetype}"},
		{regex: defaultRouteTopicRegex, replacement: "${routedByValue}.events", want: "{aggregatetype}.events"},
		{regex: defaultRouteTopicRegex, replacement: "$1.events", want: "{aggregatetype}.events"},
		{regex: defaultRouteTopicRegex, replacement: "$0", want: "{aggregatetype}"},
		{regex: defaultRouteTopicRegex, replacement: "$10", want: "{aggregatetype}0"}, // group 1, then 0: there is no group 10
		{regex: defaultRouteTopicRegex, replacement: "fixed-topic", want: "fixed-topic"},
		{regex: defaultRouteTopicRegex, replacement: `cost\$.${routedByValue}`, want: "cost$.{aggregatetype}"},
		{regex: "(.*)", replacement: "x.$1", want: "x.{aggregatetype}"},
		{regex: "(?<v>.*)", replacement: "x.${v}", want: "x.{aggregatetype}"},
		{regex: "(.*)", replacement: "x.${routedByValue}", err: "names a group that"},
		{regex: defaultRouteTopicRegex, replacement: "x.$2", err: "refers to group $2"},
		{regex: defaultRouteTopicRegex, replacement: "x.$", err: "has a $ that is not a group's"},
		{regex: defaultRouteTopicRegex, replacement: `x\`, err: "ends with \\"},
		{regex: defaultRouteTopicRegex, replacement: "x.{y}", err: "a topic cannot have { or }"},
		{regex: "(?<routedByValue>[a-z]+)", replacement: "x", err: "cannot apply a regular expression"},
		{regex: "prefix-(.*)", replacement: "$1", err: "cannot apply a regular expression"},
	}
	for _, tt := range tests {
		got, err := routeTopic(tt.regex, tt.replacement, "aggregatetype")
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("routeTopic(%q, %q) = %q, %v; want an error with %q", tt.regex, tt.replacement, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("routeTopic(%q, %q) = %q, %v; want %q", tt.regex, tt.replacement, got, err, tt.want)
		}
	}
}

// TestSplitRegexList: table.include.list splits as Debezium splits it.
func TestSplitRegexList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"public.a", []string{"public.a"}},
		{" public.a , public.b,,", []string{"public.a", "public.b"}},
		{`public\.a{1\,2}, public.b`, []string{`public\.a{1,2}`, "public.b"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitRegexList(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitRegexList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestYAMLScalar: a value is quoted when YAML would read it otherwise.
func TestYAMLScalar(t *testing.T) {
	tests := []struct{ in, want string }{
		{"payload", "payload"},
		{"public.outbox_event", "public.outbox_event"},
		{"true", `"true"`},
		{"No", `"No"`},
		{"123", `"123"`},
		{"{x}", `"{x}"`},
		{"a b", `"a b"`},
		{"", `""`},
		{"café", `"café"`},
	}
	for _, tt := range tests {
		if got := yamlScalar(tt.in); got != tt.want {
			t.Errorf("yamlScalar(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestIsSecret: the properties whose values config from-debezium never
// shows: passwords, credentials, and keys (Kafka's inline PEM
// ssl.keystore.key, in a producer override too).
func TestIsSecret(t *testing.T) {
	for key, want := range map[string]bool{
		"database.password":                       true,
		"producer.override.sasl.jaas.config":      true,
		"producer.override.ssl.keystore.key":      true,
		"ssl.keystore.certificate.chain":          true,
		"producer.override.ssl.key.password":      true,
		"value.converter.basic.auth.user.info":    true,
		"database.hostname":                       false,
		"transforms.outbox.table.field.event.key": false,
		"key.converter":                           false,
	} {
		if got := isSecret(key); got != want {
			t.Errorf("isSecret(%q) = %t, want %t", key, got, want)
		}
	}
}
