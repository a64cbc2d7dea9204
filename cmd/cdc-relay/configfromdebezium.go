package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/cdc-relay/cdc-relay/replication"
)

// configFromDebezium is `cdc-relay config from-debezium FILE`: the
// relay.yaml of a Debezium PostgreSQL connector with the outbox event
// router, from its Kafka Connect JSON config. This file reads the input,
// maps the router's and the connector's properties and writes the YAML;
// configfromdebezium_props.go says what each other property is to the
// relay.
var configFromDebezium = configSubcommand{
	head: fromDebeziumUsage,
	flags: func(c *ConfigCommand, fs *flag.FlagSet) {
		fs.StringVar(&c.fromDebezium.slot, "slot", "",
			"the `name` of a slot of the relay's own, which 'cdc-relay migrate' creates while the connector runs, instead of taking over the connector's "+
				"slot.name; the relay's publication is named the same unless --publication (docs/switching-from-debezium.md)")
		fs.StringVar(&c.fromDebezium.publication, "publication", "",
			"the `name` of the relay's publication, instead of the connector's publication.name (or, with --slot, the slot's name)")
		// Which slot the relay reads is said on the command line, never by
		// run's CDC_RELAY_SLOT left set in a shell.
		onlyOnCommandLine(fs, "slot", "publication")
	},
	sections: []flagSection{{"The relay's slot (default: the connector's, taken over once it is stopped)", []string{"slot", "publication"}}},
	run:      (*ConfigCommand).runFromDebezium,
}

const fromDebeziumUsage = `Usage: cdc-relay config from-debezium [--slot NAME [--publication NAME]] FILE

Prints on standard output the relay.yaml that relays the outbox tables of
a Debezium PostgreSQL connector with the outbox event router
(io.debezium.transforms.outbox.EventRouter) as the connector does: the
same topics, keys, values and id header, with the connector's converters,
so that the consumers of the router's topics change nothing.

FILE (- for standard input) is the connector's JSON, as Kafka Connect's
REST API has it: {"name": ..., "config": {...}}, or the config object
alone (GET /connectors/NAME/config). Its values are strings, as the API
gives them; numbers and true/false are taken too.

Every property is accounted for: each line of the YAML names the
property it comes from, and standard error lists, one a line, each
property the relay cannot honour, should be checked, or does not need,
and why. The connection (database.*) is not carried over: the relay gets
it from --postgres-url, CDC_RELAY_POSTGRES_URL or --postgres-url-file;
no password is ever printed. A connector names no Kafka brokers: set
kafka.brokers in the file, or --kafka-brokers.

The relay takes over the connector's slot (slot.name, which must use
pgoutput) and publication: stop the connector, then migrate and run the
relay. With --slot, the relay gets a slot and a publication of its own,
made while the connector runs, whatever its plugin.name, and the
connector is stopped once the relay runs (docs/switching-from-debezium.md).

Exit status: 0 when it printed a relay.yaml, even with properties listed
on standard error; 1 when it cannot make one (not a PostgreSQL connector,
no outbox event router, plugin.name other than pgoutput without --slot,
no table it can name, a topic the relay cannot make), saying what to do;
2 for a mistake on the command line.

Examples:

  curl -s http://connect:8083/connectors/outbox-connector > connector.json
  cdc-relay config from-debezium connector.json > relay.yaml
  cdc-relay config from-debezium --slot outbox_relay connector.json > relay.yaml
  cdc-relay check-config --config relay.yaml
`

// fromDebeziumFlags are from-debezium's flags.
type fromDebeziumFlags struct {
	slot, publication string // --slot, --publication: "" for the connector's
}

// maxConnectorJSON is the most bytes from-debezium reads: a connector's
// config is a few KB.
const maxConnectorJSON = 1 << 20

// runFromDebezium is `config from-debezium FILE`.
func (c *ConfigCommand) runFromDebezium(_ context.Context, operands []string, usage func(string, ...any) error) error {
	if len(operands) != 1 {
		return usage("want one FILE, the connector's JSON config (- for standard input), got %d arguments", len(operands))
	}
	opts := c.fromDebezium
	if opts.slot != "" {
		if err := replication.ValidSlotName(opts.slot); err != nil {
			return usage("--slot: %v", err)
		}
	}
	path, source := operands[0], operands[0]
	var r io.Reader
	if path == "-" {
		source, r = "standard input", c.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("%s: read the connector's config: %w", c.sub, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxConnectorJSON+1))
	if err != nil {
		return fmt.Errorf("%s: read %s: %w", c.sub, source, err)
	}
	if len(data) > maxConnectorJSON {
		return fmt.Errorf("%s: %s is over %d bytes: a connector's JSON config is a few KB: check that this is one", c.sub, source, maxConnectorJSON)
	}
	conn, err := parseConnectorJSON(source, data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.sub, err)
	}
	res := convertDebezium(conn, opts)
	writeFindings(c.stderr, source, res.findings)
	if len(res.fatal) > 0 {
		return fmt.Errorf("%s: %s: cannot make a relay.yaml:\n  %s", c.sub, source, strings.Join(res.fatal, "\n  "))
	}
	_, err = io.WriteString(c.stdout, res.yaml)
	return err
}

// debeziumConnector is a connector's config as from-debezium read it:
// its properties in the input's order, and what the REST body held beside
// them.
type debeziumConnector struct {
	source string            // the input's name, for messages
	name   string            // the connector's name: the body's, else the config's; "" if none
	keys   []string          // the config's properties, in the input's order, each once
	values map[string]string // each property's value
	nulls  map[string]bool   // the properties given as null: unset
	// outer are the REST body's keys beside config and name (tasks,
	// type: GET /connectors/NAME has them).
	outer []string
}

// parseConnectorJSON reads data, the REST body {"name", "config"} or the
// bare config object.
func parseConnectorJSON(source string, data []byte) (*debeziumConnector, error) {
	keys, raw, err := orderedObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not a connector's JSON config: %v: want the JSON object Kafka Connect's REST API gives (GET /connectors/NAME, or /connectors/NAME/config)", source, err)
	}
	conn := &debeziumConnector{source: source, values: map[string]string{}, nulls: map[string]bool{}}
	if body, ok := raw["config"]; ok && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		for _, k := range keys {
			switch k {
			case "config":
			case "name":
				if err := json.Unmarshal(raw[k], &conn.name); err != nil {
					return nil, fmt.Errorf("%s: \"name\" is not a string", source)
				}
			default:
				conn.outer = append(conn.outer, k)
			}
		}
		if keys, raw, err = orderedObject(body); err != nil {
			return nil, fmt.Errorf("%s: \"config\": %v", source, err)
		}
	}
	for _, k := range keys {
		v, isNull, err := propertyValue(raw[k])
		if err != nil {
			return nil, fmt.Errorf("%s: property %q: %v: Kafka Connect's config values are strings", source, k, err)
		}
		conn.keys = append(conn.keys, k)
		if isNull {
			conn.nulls[k] = true
			continue
		}
		conn.values[k] = v
	}
	if n, ok := conn.values["name"]; ok && conn.name == "" {
		conn.name = n
	}
	return conn, nil
}

// orderedObject reads data as one JSON object: its keys in order, each
// once (a repeated key keeps its first place and its last value, as Go's
// and Jackson's decoders do), and each one's value.
func orderedObject(data []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("the JSON is not an object")
	}
	var keys []string
	raw := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := t.(string) // an object's key is a string, or Token fails
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, seen := raw[k]; !seen {
			keys = append(keys, k)
		}
		raw[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("more after the object")
	}
	return keys, raw, nil
}

// propertyValue is a property's value as Kafka Connect reads it: a
// string as it is, a number or a boolean as its JSON text; null is unset.
func propertyValue(raw json.RawMessage) (v string, isNull bool, err error) {
	s := string(bytes.TrimSpace(raw))
	switch {
	case s == "null":
		return "", true, nil
	case strings.HasPrefix(s, `"`):
		err = json.Unmarshal(raw, &v)
		return v, false, err
	case s == "true" || s == "false":
		return s, false, nil
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		return "", false, fmt.Errorf("an object or a list")
	}
	return s, false, nil // a number, as written
}

// The classes from-debezium knows, by their full names; Kafka Connect
// also takes a plugin's simple name, and a converter's or a connector's
// without its suffix (isClass).
const (
	postgresConnectorClass     = "io.debezium.connector.postgresql.PostgresConnector"
	eventRouterClass           = "io.debezium.transforms.outbox.EventRouter"
	stringConverterClass       = "org.apache.kafka.connect.storage.StringConverter"
	byteArrayConverterClass    = "org.apache.kafka.connect.converters.ByteArrayConverter"
	jsonConverterClass         = "org.apache.kafka.connect.json.JsonConverter"
	simpleHeaderConverterClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
)

// isClass reports whether value names class: its full name or one of
// the aliases Kafka Connect takes for it (the simple name, and without
// the suffix "Connector" or "Converter").
func isClass(value, class string) bool {
	value = strings.TrimSpace(value)
	if value == class {
		return true
	}
	simple := class[strings.LastIndex(class, ".")+1:]
	if value == simple {
		return true
	}
	for _, suffix := range []string{"Connector", "Converter"} {
		if pruned, ok := strings.CutSuffix(simple, suffix); ok && pruned != "" && value == pruned {
			return true
		}
	}
	return false
}

// The router's properties, and their defaults
// (io.debezium.transforms.outbox.EventRouterConfigDefinition and
// io.debezium.transforms.tracing.ActivateTracingSpan, Debezium 3.x).
const (
	routerFieldEventID          = "table.field.event.id"                    // default id
	routerFieldEventKey         = "table.field.event.key"                   // default aggregateid
	routerFieldEventType        = "table.field.event.type"                  // default type; not read
	routerFieldEventTimestamp   = "table.field.event.timestamp"             // no default
	routerFieldPayload          = "table.field.event.payload"               // default payload
	routerFieldsAdditional      = "table.fields.additional.placement"       // no default
	routerFieldsMissing         = "table.field.additional.missing"          // default error
	routerFieldSchemaVersion    = "table.field.event.schema.version"        // no default
	routerRouteByField          = "route.by.field"                          // default aggregatetype
	routerRouteTopicRegex       = "route.topic.regex"                       // default (?<routedByValue>.*)
	routerRouteTopicReplacement = "route.topic.replacement"                 // default outbox.event.${routedByValue}
	routerTombstoneOnEmpty      = "route.tombstone.on.empty.payload"        // default false
	routerOpInvalidBehavior     = "table.op.invalid.behavior"               // default warn
	routerExpandJSONPayload     = "table.expand.json.payload"               // default false
	routerJSONNullBehavior      = "table.json.payload.null.behavior"        // default ignore
	routerJSONEmptyArray        = "table.json.payload.empty.array.behavior" // default ignore
	routerTracingContextField   = "tracing.span.context.field"              // default tracingspancontext
	routerTracingOperationName  = "tracing.operation.name"                  // default debezium-read
	routerTracingContextOnly    = "tracing.with.context.field.only"         // default false
)

// routerProperties are the router's properties, each read below.
var routerProperties = []string{
	routerFieldEventID, routerFieldEventKey, routerFieldEventType, routerFieldEventTimestamp, routerFieldPayload,
	routerFieldsAdditional, routerFieldsMissing, routerFieldSchemaVersion, routerRouteByField, routerRouteTopicRegex,
	routerRouteTopicReplacement, routerTombstoneOnEmpty, routerOpInvalidBehavior, routerExpandJSONPayload,
	routerJSONNullBehavior, routerJSONEmptyArray, routerTracingContextField, routerTracingOperationName, routerTracingContextOnly,
}

// defaultRouteTopicRegex is route.topic.regex's default: the routed
// value, whole.
const defaultRouteTopicRegex = "(?<routedByValue>.*)"

// findingKind is what a property is to the relay, in the order
// standard error lists them.
type findingKind int

const (
	cannotHonour findingKind = iota // changes what consumers read, and the relay cannot do it
	toCheck                         // may change what consumers read: the operator checks
	notCarried                      // the connection: given to the relay otherwise
	notNeeded                       // changes nothing the relay does or the consumers read
)

// findingTitles head each kind's lines on standard error.
var findingTitles = map[findingKind]string{
	cannotHonour: "cannot be honoured",
	toCheck:      "to check",
	notCarried:   "not carried over",
	notNeeded:    "not needed by the relay",
}

// finding is one line of standard error: properties (what), one or a
// group, and why.
type finding struct {
	kind      findingKind
	what, why string
}

// debeziumResult is what convertDebezium made: the YAML, the lines of
// standard error, and why it could make no YAML (fatal, none when it
// could).
type debeziumResult struct {
	yaml     string
	findings []finding
	fatal    []string
}

// yamlLine is a line of the YAML: code, and a comment after it; a line
// without code is the comment alone.
type yamlLine struct{ code, comment string }

// fromDebezium is one conversion under way.
type fromDebezium struct {
	conn *debeziumConnector
	opts fromDebeziumFlags
	used map[string]bool // the properties accounted for

	findings []finding
	fatal    []string

	router       string // the router's transform's name
	routerPrefix string // "transforms.<router>."
	takeover     bool   // the relay takes over the connector's slot (no --slot)

	header []string   // the file's header comments, one a paragraph
	top    []yamlLine // slot, publication, kafka
	tables []string   // the tables, schema.table
	table  []yamlLine // each table's lines after its table: line

	writesSchemas bool // a converter writes the Connect schema (json-with-schema, or one not honoured)
	envelope      bool // the router places fields in an envelope
	// envelopeSchema: the envelope is written with its schema, named
	// after routeBy's value (each table gets its envelope_schema_name).
	envelopeSchema bool
	routeBy        string
}

// convertDebezium maps conn's properties to a relay.yaml, opts naming
// the relay's own slot and publication, if any.
func convertDebezium(conn *debeziumConnector, opts fromDebeziumFlags) debeziumResult {
	d := &fromDebezium{conn: conn, opts: opts, used: map[string]bool{}, takeover: opts.slot == ""}
	if d.connectorClass() && d.findRouter() {
		d.slot()
		d.tableList()
		d.mapRouter()
		d.converters()
		d.connectorLevel()
		d.theRest()
	}
	res := debeziumResult{findings: d.findings, fatal: d.fatal}
	if len(d.fatal) == 0 {
		res.yaml = d.yaml()
	}
	return res
}

// value returns property key's value and whether it is set, marking it
// accounted for.
func (d *fromDebezium) value(key string) (string, bool) {
	if d.conn.nulls[key] && !d.used[key] {
		d.used[key] = true
		d.add(notNeeded, key+"=null", "null is unset: the default applies")
	}
	v, ok := d.conn.values[key]
	if ok {
		d.used[key] = true
	}
	return v, ok
}

// routerValue returns the router's property key (without the
// transform's prefix) and whether it is set.
func (d *fromDebezium) routerValue(key string) (string, bool) {
	return d.value(d.routerPrefix + key)
}

// add records a line of standard error.
func (d *fromDebezium) add(kind findingKind, what, why string) {
	d.findings = append(d.findings, finding{kind: kind, what: what, why: why})
}

// fail records why no YAML can be made.
func (d *fromDebezium) fail(format string, a ...any) {
	d.fatal = append(d.fatal, fmt.Sprintf(format, a...))
}

// shown is key=value for a message, the value hidden when the property
// holds a secret (isSecret), quoted when it is empty or has spaces.
func (d *fromDebezium) shown(key string) string {
	v, ok := d.conn.values[key]
	switch {
	case d.conn.nulls[key]:
		return key + "=null"
	case !ok:
		return key + " (unset)"
	case isSecret(key):
		return key + " (value not shown)"
	case v == "" || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || !unicode.IsPrint(r) }) >= 0:
		return key + "=" + strconv.Quote(v)
	}
	return key + "=" + v
}

// secretWords mark a property whose value is never shown: a password, a
// key or a token, or credentials (a schema registry's user info, a JAAS
// config).
var secretWords = []string{"password", "secret", "token", "credential", "user.info", "jaas", "api.key", "apikey"}

// isSecret reports whether property key holds a secret: one of
// secretWords, or a key store's or a private key's (Kafka's inline PEM
// ssl.keystore.key and ssl.keystore.certificate.chain).
func isSecret(key string) bool {
	k := strings.ToLower(key)
	if strings.Contains(k, "keystore") || strings.Contains(k, "ssl.key") || strings.HasSuffix(k, "private.key") {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// connectorClass checks that the connector is Debezium's PostgreSQL
// connector; false when it is not, and nothing else is to be said.
func (d *fromDebezium) connectorClass() bool {
	class, ok := d.value("connector.class")
	switch {
	case !ok:
		d.fail("connector.class is not set: is this a Kafka Connect connector's config? " +
			"Give the JSON of GET /connectors/NAME (or /connectors/NAME/config) of the Debezium PostgreSQL connector")
		return false
	case !isClass(class, postgresConnectorClass):
		d.fail("connector.class=%s is not Debezium's PostgreSQL connector (%s): the relay reads PostgreSQL's outbox tables only", class, postgresConnectorClass)
		return false
	}
	return true
}

// findRouter finds the one transform that is the outbox event router;
// false when there is none or more than one.
func (d *fromDebezium) findRouter() bool {
	list, _ := d.value("transforms")
	if len(splitList(list)) == 0 {
		d.fail("no outbox event router: the connector has no transforms. " +
			"The relay writes the outbox event router's records (" + eventRouterClass + "): a connector without it writes Debezium's change events, which the relay does not")
		return false
	}
	var routers []string
	for _, name := range splitList(list) {
		if t, ok := d.conn.values["transforms."+name+".type"]; ok && isClass(t, eventRouterClass) {
			routers = append(routers, name)
		}
	}
	switch len(routers) {
	case 0:
		d.fail("no outbox event router: none of the connector's transforms (transforms=%s) has the type %s. "+
			"The relay writes the router's records: a connector without it writes Debezium's change events, which the relay does not", list, eventRouterClass)
		return false
	case 1:
	default:
		d.fail("transforms=%s has %d outbox event routers (%s): the relay maps one; give the config of one connector with one router", list, len(routers), strings.Join(routers, ", "))
		return false
	}
	d.router = routers[0]
	d.routerPrefix = "transforms." + d.router + "."
	d.value(d.routerPrefix + "type")
	return true
}

// slot maps slot.name, publication.name and plugin.name, or --slot and
// --publication.
func (d *fromDebezium) slot() {
	slotName, slotSet := d.value("slot.name")
	pubName, pubSet := d.value("publication.name")
	plugin, pluginSet := d.value("plugin.name")
	slotDesc := "slot.name"
	if !slotSet {
		slotName, slotDesc = "debezium", "slot.name unset, Debezium's default"
	}
	pubDesc := "publication.name"
	if !pubSet {
		pubName, pubDesc = "dbz_publication", "publication.name unset, Debezium's default"
	}
	pluginDesc := "plugin.name=" + plugin
	if !pluginSet {
		plugin, pluginDesc = "decoderbufs", "plugin.name unset: Debezium's default, decoderbufs"
	}
	pgoutput := strings.EqualFold(strings.TrimSpace(plugin), "pgoutput")

	if !d.takeover {
		d.top = append(d.top, yamlLine{"slot: " + yamlScalar(d.opts.slot),
			fmt.Sprintf("--slot: the relay's own; the connector's, %s (%s), is to be dropped once the connector is stopped", slotName, slotDesc)})
		pub := d.opts.publication
		why := "--publication"
		if pub == "" {
			pub, why = d.opts.slot, "--slot's name"
		}
		d.top = append(d.top, yamlLine{"publication: " + yamlScalar(pub),
			fmt.Sprintf("%s: the relay's own; the connector's is %s (%s)", why, pubName, pubDesc)})
		if pluginSet || !pgoutput {
			d.add(notNeeded, pluginDesc, "the plugin of the connector's slot: the relay's own slot (--slot) is pgoutput's, which 'cdc-relay migrate' creates")
		}
		return
	}
	if !pgoutput {
		d.fail("%s: the relay reads pgoutput only, so it cannot take over the connector's slot %s. "+
			"Give the relay a slot of its own, which it reads beside the connector until the connector is stopped "+
			"(cdc-relay config from-debezium --slot NAME FILE; docs/switching-from-debezium.md, the switch step by step); "+
			"or switch the connector to plugin.name=pgoutput first, on a new slot.name (a slot keeps its plugin)", pluginDesc, slotName)
		return
	}
	if err := replication.ValidSlotName(slotName); err != nil {
		d.fail("slot.name: %v: give the relay a slot of its own with --slot NAME", err)
		return
	}
	d.top = append(d.top, yamlLine{"slot: " + yamlScalar(slotName),
		fmt.Sprintf("%s; %s: the connector's slot, taken over once the connector is stopped", slotDesc, pluginDesc)})
	pub := pubName
	pubWhy := pubDesc + ": the connector's publication"
	if d.opts.publication != "" {
		pub, pubWhy = d.opts.publication, "--publication: the relay's own; the connector's is "+pubName+" ("+pubDesc+")"
	}
	d.top = append(d.top, yamlLine{"publication: " + yamlScalar(pub), pubWhy})
}

// plainTable matches a table.include.list entry that names one table:
// schema.table, the dot plain or escaped, with no other regular
// expression's character.
var plainTable = regexp.MustCompile(`^([\pL_][\pL\pN_]*)(?:\.|\\\.)([\pL_][\pL\pN_]*)$`)

// tableList maps table.include.list to the tables.
func (d *fromDebezium) tableList() {
	list, ok := d.value("table.include.list")
	if !ok || strings.TrimSpace(list) == "" {
		d.fail("table.include.list is not set: the connector captures every table, and the router reads each as an outbox table. " +
			"Name the outbox table: add \"table.include.list\": \"public.outboxevent\" (its schema.table) to the connector's JSON and run this again, " +
			"or write the tables: of relay.yaml by hand")
		return
	}
	var regexes []string
	for _, entry := range splitRegexList(list) {
		m := plainTable.FindStringSubmatch(entry)
		if m == nil {
			regexes = append(regexes, entry)
			continue
		}
		t := m[1] + "." + m[2]
		if !slices.Contains(d.tables, t) {
			d.tables = append(d.tables, t)
		}
		if strings.ToLower(t) != t {
			d.add(toCheck, "table.include.list entry "+strconv.Quote(entry),
				"Debezium matches table.include.list ignoring case, the relay names the table exactly: check that "+t+" is the table's name as the catalog has it")
		}
	}
	if len(regexes) > 0 {
		why := "a regular expression (or a name without its schema, which Debezium matches against schema.table): the relay names each table. " +
			"List in tables: each table it matches, schema.table, with the mapping of the tables above"
		if len(d.tables) == 0 {
			d.fail("table.include.list=%s: %s", list, why)
			return
		}
		d.add(cannotHonour, "table.include.list="+list+", of which "+strings.Join(regexes, ", "), why)
	}
}

// splitRegexList splits a list of regular expressions as Debezium does:
// at commas, but not at "\,", each trimmed, empty ones dropped.
func splitRegexList(s string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if p := strings.TrimSpace(strings.ReplaceAll(cur.String(), `\,`, ",")); p != "" {
			out = append(out, p)
		}
		cur.Reset()
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteString(`\,`)
			i++
		case s[i] == ',':
			flush()
		default:
			cur.WriteByte(s[i])
		}
	}
	flush()
	return out
}

// routerDesc describes a router property for a YAML comment: its name,
// "=value" when the value is not on the line already, or that it is the
// router's default.
func (d *fromDebezium) routerDesc(key string, set, withValue bool) string {
	switch {
	case !set:
		return key + " (the router's default)"
	case withValue:
		return key + "=" + d.conn.values[d.routerPrefix+key]
	}
	return key
}

// mapRouter maps the router's properties to each table's mapping.
func (d *fromDebezium) mapRouter() {
	column := func(key, def string) (string, bool) {
		v, ok := d.routerValue(key)
		if !ok {
			return def, false
		}
		return strings.TrimSpace(v), true
	}
	id, idSet := column(routerFieldEventID, "id")
	d.table = append(d.table, yamlLine{"id: " + yamlScalar(id), `header "id": ` + d.routerDesc(routerFieldEventID, idSet, false)})
	key, keySet := column(routerFieldEventKey, "aggregateid")
	d.table = append(d.table, yamlLine{"key: " + yamlScalar(key), d.routerDesc(routerFieldEventKey, keySet, false)})
	payload, payloadSet := column(routerFieldPayload, "payload")
	d.table = append(d.table, yamlLine{"value: " + yamlScalar(payload), d.routerDesc(routerFieldPayload, payloadSet, false)})
	d.topic()
	d.placements()
	if ts, ok := column(routerFieldEventTimestamp, ""); ok && ts != "" {
		d.table = append(d.table, yamlLine{"timestamp: " + yamlScalar(ts),
			routerFieldEventTimestamp + ": a timestamp column, read as UTC as Debezium reads it"})
	} else {
		d.table = append(d.table, yamlLine{"", "no timestamp: " + routerFieldEventTimestamp +
			" is unset: the router stamps each record with the time Debezium read the change, the relay's producer with the time it sends it"})
	}
	if v, ok := d.routerValue(routerFieldEventType); ok {
		d.add(notNeeded, d.shown(d.routerPrefix+routerFieldEventType), "the router does not read it (Debezium keeps it for old configs): "+
			"the event type becomes a header only by "+routerFieldsAdditional+" ("+v+":header:eventType)")
	}
	d.options()
	d.tracing()
	if v, ok := d.routerValue(routerOpInvalidBehavior); ok {
		what := d.shown(d.routerPrefix + routerOpInvalidBehavior)
		if strings.EqualFold(strings.TrimSpace(v), "fatal") {
			d.add(cannotHonour, what, "the router stops the connector on an UPDATE of an outbox row; the relay relays inserts only, and ignores the update")
		} else {
			d.add(notNeeded, what, "the router skips an UPDATE of an outbox row and logs it; the relay relays inserts only, and ignores the update")
		}
	}
	d.otherRouterProperties()
}

// topic maps route.by.field, route.topic.regex and
// route.topic.replacement to the topic template.
func (d *fromDebezium) topic() {
	by, bySet := d.routerValue(routerRouteByField)
	if !bySet {
		by = "aggregatetype"
	}
	by = strings.TrimSpace(by)
	d.routeBy = by
	regex, regexSet := d.routerValue(routerRouteTopicRegex)
	if !regexSet {
		regex = defaultRouteTopicRegex
	}
	repl, replSet := d.routerValue(routerRouteTopicReplacement)
	if !replSet {
		repl = "outbox.event.${routedByValue}"
	}
	template, err := routeTopic(regex, repl, by)
	if err != nil {
		d.fail("%s: %v", d.routerPrefix+"route.topic.*", err)
		return
	}
	desc := d.routerDesc(routerRouteByField, bySet, true) + " + " + routerRouteTopicReplacement + "=" + repl
	if !replSet {
		desc += " (the router's default)"
	}
	if regexSet {
		desc += ", " + routerRouteTopicRegex + "=" + regex
	}
	d.table = append(d.table, yamlLine{"topic: " + yamlQuoted(template), desc})
}

// routeRegexGroup matches the route.topic.regex values that pass the
// routed value on whole, as the default does: (?<name>.*) or (.*).
var routeRegexGroup = regexp.MustCompile(`^\((?:\?<([a-zA-Z][a-zA-Z0-9]*)>)?\.\*\)$`)

// routeTopic makes the relay's topic template of the router's regex and
// replacement (java.util.regex's: $n, ${name}, \ escapes), column being
// route.by.field: the column's value takes the group's place.
func routeTopic(regex, replacement, column string) (string, error) {
	m := routeRegexGroup.FindStringSubmatch(strings.TrimSpace(regex))
	if m == nil {
		return "", fmt.Errorf("%s=%s: the relay's topic is a template of columns ({%s}), which cannot apply a regular expression to the routed value; "+
			"only a regex that takes it whole, as the default %s does, can be honoured. Keep the connector for this table, "+
			"or write topic: by hand if every value of %s makes its topic the same way", routerRouteTopicRegex, regex, column, defaultRouteTopicRegex, column)
	}
	group := m[1]
	const groups = 1
	var b strings.Builder
	for i := 0; i < len(replacement); i++ {
		c := replacement[i]
		switch {
		case c == '\\':
			i++
			if i == len(replacement) {
				return "", fmt.Errorf("%s=%s ends with \\, which the router refuses", routerRouteTopicReplacement, replacement)
			}
			b.WriteByte(replacement[i])
		case c != '$':
			b.WriteByte(c)
		case i+1 < len(replacement) && replacement[i+1] == '{':
			end := strings.IndexByte(replacement[i:], '}')
			if end < 0 || replacement[i+2:i+end] != group || group == "" {
				return "", fmt.Errorf("%s=%s names a group that %s=%s does not have, which the router refuses: use ${%s}",
					routerRouteTopicReplacement, replacement, routerRouteTopicRegex, regex, cmpOr(group, "routedByValue"))
			}
			b.WriteString("{" + column + "}")
			i += end
		case i+1 < len(replacement) && replacement[i+1] >= '0' && replacement[i+1] <= '9':
			// As Matcher.appendReplacement reads $n: digits while they
			// make a group the regex has. Group 0 is the whole value,
			// as group 1 is.
			i++
			n := int(replacement[i] - '0')
			if n > groups {
				return "", fmt.Errorf("%s=%s refers to group $%d, which %s=%s does not have", routerRouteTopicReplacement, replacement, n, routerRouteTopicRegex, regex)
			}
			for i+1 < len(replacement) && replacement[i+1] >= '0' && replacement[i+1] <= '9' && n*10+int(replacement[i+1]-'0') <= groups {
				i++
				n = n*10 + int(replacement[i]-'0')
			}
			b.WriteString("{" + column + "}")
		default:
			return "", fmt.Errorf("%s=%s has a $ that is not a group's (write \\$ for a $)", routerRouteTopicReplacement, replacement)
		}
	}
	t := b.String()
	literal := strings.ReplaceAll(t, "{"+column+"}", "")
	if strings.ContainsAny(literal, "{}") {
		return "", fmt.Errorf("%s=%s: a topic cannot have { or }", routerRouteTopicReplacement, replacement)
	}
	return t, nil
}

// cmpOr is a, or b when a is "".
func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// placements maps table.fields.additional.placement: header fields to
// headers:, envelope fields to envelope:, the partition field to
// partition:.
func (d *fromDebezium) placements() {
	v, ok := d.routerValue(routerFieldsAdditional)
	if !ok {
		return
	}
	type field struct{ column, alias, entry string }
	var headers, envelope, partition []field
	for _, entry := range splitList(v) {
		parts := strings.Split(entry, ":")
		if len(parts) != 2 && len(parts) != 3 {
			d.fail("%s=%s: %q is not column:placement or column:placement:alias, which the router refuses", d.routerPrefix+routerFieldsAdditional, v, entry)
			continue
		}
		f := field{column: strings.TrimSpace(parts[0]), entry: entry}
		f.alias = f.column
		if len(parts) == 3 {
			f.alias = strings.TrimSpace(parts[2])
		}
		switch strings.ToLower(strings.TrimSpace(parts[1])) {
		case "header":
			headers = append(headers, f)
		case "envelope":
			envelope = append(envelope, f)
		case "partition":
			partition = append(partition, f)
		default:
			d.fail("%s=%s: %q places %s in %q: the router takes header, envelope or partition", d.routerPrefix+routerFieldsAdditional, v, entry, f.column, parts[1])
		}
	}
	mapping := func(fs []field) (string, string) {
		var pairs, entries []string
		for _, f := range fs {
			pairs = append(pairs, yamlScalar(f.alias)+": "+yamlScalar(f.column))
			entries = append(entries, f.entry)
		}
		return "{" + strings.Join(pairs, ", ") + "}", routerFieldsAdditional + "=" + strings.Join(entries, ",")
	}
	if len(headers) > 0 {
		// The router adds a header per field, two of one name both; the
		// relay's headers: names each once: the last, which a consumer's
		// Headers.lastHeader reads.
		var unique []field
		for i, f := range headers {
			if slices.ContainsFunc(headers[i+1:], func(g field) bool { return g.alias == f.alias }) {
				d.add(cannotHonour, d.shown(d.routerPrefix+routerFieldsAdditional), fmt.Sprintf(
					"the router writes the header %q twice, of %s and of a later field; the relay writes a header once: of the last field", f.alias, f.column))
				continue
			}
			unique = append(unique, f)
		}
		code, comment := mapping(unique)
		d.table = append(d.table, yamlLine{"headers: " + code, comment})
	}
	if len(envelope) > 0 {
		d.envelope = true
		code, comment := mapping(envelope)
		d.table = append(d.table, yamlLine{"envelope: " + code, comment + ": the value is {\"payload\": …, alias: column…}"})
	}
	if n := len(partition); n > 0 {
		// The router sets the partition of each field in turn: the last
		// one's stays.
		f := partition[n-1]
		d.table = append(d.table, yamlLine{"partition: " + yamlScalar(f.column), routerFieldsAdditional + "=" + f.entry + ": the record goes to the partition the column names"})
		if n > 1 {
			d.add(toCheck, d.shown(d.routerPrefix+routerFieldsAdditional), fmt.Sprintf(
				"%d fields are placed as the partition; the router keeps the last one's, %s, and so does the relay", n, f.column))
		}
	}
}

// options maps the router's switches: table.expand.json.payload,
// route.tombstone.on.empty.payload, table.field.additional.missing and
// the JSON payload behaviours.
func (d *fromDebezium) options() {
	expand := d.routerBool(routerExpandJSONPayload)
	switch {
	case expand:
		d.table = append(d.table, yamlLine{"expand_json_payload: true", routerExpandJSONPayload + "=true"})
	case d.routerSet(routerExpandJSONPayload):
		d.table = append(d.table, yamlLine{"", routerExpandJSONPayload + "=false: the payload as it is, as the relay writes it"})
	}
	for _, kv := range [][2]string{{routerJSONNullBehavior, "json_payload_null_behavior"}, {routerJSONEmptyArray, "json_payload_empty_array_behavior"}} {
		key, relayKey := kv[0], kv[1]
		v, ok := d.routerValue(key)
		if !ok {
			continue
		}
		if expand {
			d.table = append(d.table, yamlLine{relayKey + ": " + yamlScalar(strings.ToLower(strings.TrimSpace(v))), key + "=" + v})
		} else {
			d.add(notNeeded, d.shown(d.routerPrefix+key), "read only with "+routerExpandJSONPayload+"=true")
		}
	}
	switch {
	case d.routerBool(routerTombstoneOnEmpty):
		d.table = append(d.table, yamlLine{"tombstone_on_empty_payload: true", routerTombstoneOnEmpty + "=true"})
	case d.routerSet(routerTombstoneOnEmpty):
		d.table = append(d.table, yamlLine{"", routerTombstoneOnEmpty + "=false: an empty payload is sent as it is, as the relay sends it"})
	}
	if v, ok := d.routerValue(routerFieldsMissing); ok {
		if strings.EqualFold(strings.TrimSpace(v), "ignore") {
			d.add(cannotHonour, d.shown(d.routerPrefix+routerFieldsMissing),
				"the router leaves out a placed field the table lacks; the relay refuses to start without a column it maps (check-config names it): remove that field from headers:")
		} else {
			d.table = append(d.table, yamlLine{"", routerFieldsMissing + "=" + v + ": a column the mapping names must exist, as the relay requires"})
		}
	}
	if _, ok := d.routerValue(routerFieldSchemaVersion); ok {
		if d.envelope {
			d.add(toCheck, d.shown(d.routerPrefix+routerFieldSchemaVersion),
				"the router gives the envelope's schema this column's version, which JsonConverter with schemas writes (\"version\") and the relay does not: "+
					"with schemas a consumer that reads the version sees none; without, nothing differs")
		} else {
			d.add(notNeeded, d.shown(d.routerPrefix+routerFieldSchemaVersion),
				"the router versions the envelope's schema only, and no field is placed in an envelope")
		}
	}
}

// routerSet reports whether the router's property key is set.
func (d *fromDebezium) routerSet(key string) bool {
	_, ok := d.conn.values[d.routerPrefix+key]
	return ok
}

// routerBool reads the router's boolean property key (false when unset);
// a value that is not true or false is fatal, as it is to the router.
func (d *fromDebezium) routerBool(key string) bool {
	v, ok := d.routerValue(key)
	if !ok {
		return false
	}
	b, err := connectBool(v)
	if err != nil {
		d.fail("%s=%s: want true or false", d.routerPrefix+key, v)
	}
	return b
}

// connectBool reads a boolean as Kafka Connect's ConfigDef does: true or
// false, in any case, white space trimmed.
func connectBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// tracing maps tracing.span.context.field, and lists the router's other
// tracing properties.
func (d *fromDebezium) tracing() {
	if v, ok := d.routerValue(routerTracingContextField); ok {
		d.table = append(d.table, yamlLine{"tracing_span_context: " + yamlScalar(strings.TrimSpace(v)), routerTracingContextField})
	} else {
		// The router reads its default column whenever a row has it (and
		// OpenTelemetry is on the worker's class path); the relay needs
		// the column named, and refuses one the table lacks.
		d.add(toCheck, d.routerPrefix+routerTracingContextField+" (unset)",
			"the router reads the trace context of the column tracingspancontext when a table has it and OpenTelemetry is on the worker: "+
				"for a table with that column, add tracing_span_context: tracingspancontext")
	}
	for _, key := range []string{routerTracingOperationName, routerTracingContextOnly} {
		if _, ok := d.routerValue(key); ok {
			d.add(cannotHonour, d.shown(d.routerPrefix+key),
				"the router's own OpenTelemetry span (when the worker has OpenTelemetry): the relay makes no span of its own")
		}
	}
}

// otherRouterProperties lists the router transform's properties that are
// not the router's (its predicate, a misspelling), and the router's
// properties given to the connector instead of the transform.
func (d *fromDebezium) otherRouterProperties() {
	pred, hasPred := d.value(d.routerPrefix + "predicate")
	negate, hasNegate := d.value(d.routerPrefix + "negate")
	if hasPred || hasNegate {
		what := []string{d.shown(d.routerPrefix + "predicate")}
		if hasNegate {
			what = append(what, d.shown(d.routerPrefix+"negate"))
		}
		what = append(what, d.predicateProps(pred)...)
		d.add(cannotHonour, strings.Join(what, ", "), fmt.Sprintf(
			"the router applies only to the records its predicate %s (negate=%s) matches; the relay maps every insert of its tables: "+
				"keep in tables: only the outbox tables, and the connector for the other tables' change events", pred, cmpOr(negate, "false")))
	}
	for _, key := range d.conn.keys {
		if d.used[key] {
			continue
		}
		if strings.HasPrefix(key, d.routerPrefix) {
			d.used[key] = true
			d.add(toCheck, d.shown(key), "not a property of the outbox event router that this command knows (Debezium 3.x): check its spelling")
		} else if slices.Contains(routerProperties, key) {
			d.used[key] = true
			d.add(toCheck, d.shown(key), fmt.Sprintf("a property of the outbox event router given to the connector, which ignores it: the router reads %s%s", d.routerPrefix, key))
		}
	}
}

// predicateProps marks the properties of predicate name (predicates.name.*)
// accounted for and returns them, for the finding of the transform that
// uses it.
func (d *fromDebezium) predicateProps(name string) []string {
	var out []string
	if name = strings.TrimSpace(name); name == "" {
		return nil
	}
	for _, key := range d.conn.keys {
		if strings.HasPrefix(key, "predicates."+name+".") && !d.used[key] {
			d.used[key] = true
			out = append(out, d.shown(key))
		}
	}
	return out
}

// converter is what a Kafka Connect converter class is to the relay.
type converter struct {
	relay  string // key_converter's or value_converter's value; "" when it cannot be honoured
	json   bool   // JsonConverter: schemas.enable applies
	string bool   // StringConverter: its encoding applies
}

// converterOf classifies a converter class.
func converterOf(class string) converter {
	switch {
	case isClass(class, stringConverterClass):
		return converter{relay: "string", string: true}
	case isClass(class, byteArrayConverterClass):
		return converter{relay: "raw"}
	case isClass(class, jsonConverterClass):
		return converter{relay: "json", json: true}
	}
	return converter{}
}

// converters maps key.converter and value.converter (and their
// settings) to key_converter and value_converter, and lists
// header.converter.
func (d *fromDebezium) converters() {
	for _, side := range []string{"key", "value"} {
		d.converter(side)
	}
	d.headerConverter()
}

// settingsOf returns the properties of prefix (a converter's settings,
// "key.converter."), in the input's order.
func (d *fromDebezium) settingsOf(prefix string) []string {
	var out []string
	for _, key := range d.conn.keys {
		if strings.HasPrefix(key, prefix) {
			out = append(out, key)
		}
	}
	return out
}

// converter maps side's converter ("key" or "value").
func (d *fromDebezium) converter(side string) {
	prop := side + ".converter"
	relayKey := side + "_converter"
	class, set := d.value(prop)
	settings := d.settingsOf(prop + ".")
	if !set {
		what := []string{prop + " (unset)"}
		for _, s := range settings {
			d.used[s] = true
			what = append(what, d.shown(s))
		}
		why := fmt.Sprintf("the Kafka Connect worker's %s decides, with its own settings (Kafka Connect reads a connector's %s.* only beside its %s): "+
			"the relay writes the column's text (%s: raw, its default: StringConverter's bytes but for a boolean, t or f); for the worker's JsonConverter set %s: json "+
			"(%s.schemas.enable=false) or json-with-schema (true, JsonConverter's default) in each table of relay.yaml, "+
			"or add the worker's %s and %s.schemas.enable to the connector's JSON and run this again", prop, prop, prop, relayKey, relayKey, prop, prop, prop)
		d.add(toCheck, strings.Join(what, ", "), why)
		d.table = append(d.table, yamlLine{"", fmt.Sprintf("%s unset: the worker's decides; the column's text assumed (%s: raw, the relay's default): see standard error", prop, relayKey)})
		d.envelopeNeedsJSON(side, "")
		return
	}
	conv := converterOf(class)
	if conv.relay == "" {
		what := []string{d.shown(prop)}
		for _, s := range settings {
			d.used[s] = true
			what = append(what, d.shown(s))
		}
		d.add(cannotHonour, strings.Join(what, ", "), fmt.Sprintf(
			"the relay writes StringConverter's or JsonConverter's bytes only (%s: string, json or json-with-schema); "+
				"consumers that read this converter's format (a schema registry's) cannot read them: keep the connector for these topics", relayKey))
		d.writesSchemas = true
		d.table = append(d.table, yamlLine{"", prop + "=" + class + " cannot be honoured: see standard error"})
		return
	}
	defer func() { d.envelopeNeedsJSON(side, conv.relay) }()
	comment := []string{prop + "=" + class}
	schemas := true // JsonConverter's default
	for _, s := range settings {
		name := strings.TrimPrefix(s, prop+".")
		v := d.conn.values[s]
		d.used[s] = true
		switch {
		case d.conn.nulls[s]:
			d.add(notNeeded, s+"=null", "null is unset: the converter's default applies")
		case conv.json && name == "schemas.enable":
			b, err := connectBool(v)
			if err != nil {
				d.fail("%s=%s: want true or false", s, v)
			}
			schemas = b
			comment = append(comment, s+"="+v)
		case conv.json && name == "replace.null.with.default" && strings.EqualFold(strings.TrimSpace(v), "false"):
			comment = append(comment, s+"="+v)
		case conv.json && name == "replace.null.with.default":
			d.add(toCheck, d.shown(s), "JsonConverter writes a NULL column's DEFAULT, when Debezium read a constant one from the catalog; "+
				"the relay writes null: check that the "+side+" column has no DEFAULT, or that it is never NULL")
		case conv.json && name == "decimal.format":
			d.add(notNeeded, d.shown(s), "how JsonConverter writes decimal columns, which the relay's JSON converters refuse as a key or a value (check-config names one)")
		case name == "schemas.cache.size" || name == "converter.type":
			d.add(notNeeded, d.shown(s), "a setting of the converter's own, which changes no byte it writes")
		case conv.string && name == "converter.encoding":
			if enc := strings.ToUpper(strings.TrimSpace(v)); enc == "UTF8" || enc == "UTF-8" {
				comment = append(comment, s+"="+v)
			} else {
				d.add(cannotHonour, d.shown(s), "the relay writes text as UTF-8: consumers that read "+v+" cannot read it")
			}
		default:
			d.add(toCheck, d.shown(s), "a setting of "+class+" that this command does not know: check that it changes no byte the converter writes")
		}
	}
	if conv.json && !schemas {
		conv.relay = "json"
	} else if conv.json {
		conv.relay = "json-with-schema"
		d.writesSchemas = true
		if !slices.ContainsFunc(comment, func(c string) bool { return strings.Contains(c, "schemas.enable") }) {
			comment = append(comment, prop+".schemas.enable unset: true, JsonConverter's default")
		}
	}
	if conv.relay == "raw" {
		d.table = append(d.table, yamlLine{"", relayKey + ": raw, the relay's default (the column's bytes): " + strings.Join(comment, ", ")})
		return
	}
	d.table = append(d.table, yamlLine{relayKey + ": " + conv.relay, strings.Join(comment, ", ")})
}

// envelopeNeedsJSON lists the envelope as not honoured when side is the
// value and its converter (relay, "" unset) is not json: the relay writes
// the router's envelope with JsonConverter, without schemas, or with them
// (then named per table: envelope_schema_name) unless the payload is
// expanded.
func (d *fromDebezium) envelopeNeedsJSON(side, relay string) {
	if side != "value" || !d.envelope || relay == "json" {
		return
	}
	if relay == "json-with-schema" && !d.routerBool(routerExpandJSONPayload) {
		d.envelopeSchema = true
		d.add(toCheck, d.shown(d.routerPrefix+routerFieldsAdditional),
			"fields placed in the envelope, under JsonConverter with schemas: the router names every envelope of one payload type (jsonb, text, bytea) "+
				"after the first row it routed since the connector started, the relay each after its own row (envelope_schema_name): "+
				"the names differ for a table routed more than one way, or two tables of one payload type")
		return
	}
	for i, l := range d.table {
		if strings.HasPrefix(l.code, "envelope: ") {
			d.table[i] = yamlLine{"", l.code + " cannot be honoured: see standard error (" + l.comment + ")"}
		}
	}
	d.add(cannotHonour, d.shown(d.routerPrefix+routerFieldsAdditional), fmt.Sprintf(
		"fields placed in the envelope: the relay writes the envelope with value_converter json, or json-with-schema without table.expand.json.payload (value converter %s); "+
			"with schemas and an expanded payload the router names each payload structure's envelope after the first routed value it saw, and StringConverter writes Java's text of the struct",
		cmpOr(relay, "unset")))
}

// headerConverter lists header.converter: the relay writes header values
// as text, as SimpleHeaderConverter (the worker's default) and
// StringConverter do.
func (d *fromDebezium) headerConverter() {
	const prop = "header.converter"
	class, set := d.value(prop)
	settings := d.settingsOf(prop + ".")
	if !set {
		for _, s := range settings {
			d.used[s] = true
			d.add(notNeeded, d.shown(s), "a setting of header.converter, which the connector does not set: the worker's converter and settings decide")
		}
		d.table = append(d.table, yamlLine{"", "header.converter unset: the worker's, SimpleHeaderConverter by default, which header_converter: string writes as " +
			"(the relay's default, raw, differs for a boolean header column only)"})
		return
	}
	comment := []string{prop + "=" + class}
	var unknown []string
	schemas := true // JsonConverter's default
	json := isClass(class, jsonConverterClass)
	for _, s := range settings {
		d.used[s] = true
		name, v := strings.TrimPrefix(s, prop+"."), d.conn.values[s]
		if json && name == "schemas.enable" {
			b, err := connectBool(v)
			if err != nil {
				d.fail("%s=%s: want true or false", s, v)
			}
			schemas = b
			comment = append(comment, s+"="+v)
			continue
		}
		unknown = append(unknown, d.shown(s))
	}
	if len(unknown) > 0 {
		d.add(toCheck, strings.Join(unknown, ", "), "settings of "+class+" that this command does not know: check that they change no header's bytes")
	}
	switch {
	case isClass(class, simpleHeaderConverterClass) || isClass(class, stringConverterClass):
		d.table = append(d.table, yamlLine{"header_converter: string", strings.Join(comment, ", ")})
	case json && !schemas:
		d.table = append(d.table, yamlLine{"header_converter: json", strings.Join(comment, ", ")})
	case json:
		if !slices.ContainsFunc(comment, func(c string) bool { return strings.Contains(c, "schemas.enable") }) {
			comment = append(comment, prop+".schemas.enable unset: true, JsonConverter's default")
		}
		d.table = append(d.table, yamlLine{"header_converter: json-with-schema", strings.Join(comment, ", ")})
	default:
		d.add(cannotHonour, d.shown(prop), "the relay writes header values as text (header_converter: raw or string) or JSON (json, json-with-schema): "+
			"consumers that read this converter's header values cannot read them")
	}
}

// connectorLevel maps the connector's own properties that change what
// the consumers read: extended.headers.enabled, the database connection
// (not carried over), the producer's overrides, the other transforms.
func (d *fromDebezium) connectorLevel() {
	if v, ok := d.value("extended.headers.enabled"); ok {
		b, err := connectBool(v)
		switch {
		case err != nil:
			d.fail("extended.headers.enabled=%s: want true or false", v)
		case !b:
			d.header = append(d.header, "extended.headers.enabled=false: the connector writes no __debezium.context.* headers, nor does the relay.")
		default:
			d.add(cannotHonour, d.shown("extended.headers.enabled"), extendedHeadersWhy)
		}
	} else {
		d.add(cannotHonour, "extended.headers.enabled (unset: true, Debezium's default)", extendedHeadersWhy)
	}
	d.database()
	d.producerOverrides()
	d.otherTransforms()
}

// extendedHeadersWhy says what the relay does not write of a connector
// with extended.headers.enabled.
const extendedHeadersWhy = "the connector (Debezium 3.2.1 and later) adds the headers __debezium.context.connectorLogicalName (topic.prefix), " +
	"__debezium.context.taskId, __debezium.context.connectorName and __debezium.context.runId (new each run) to every record; " +
	"the relay does not write them: a consumer that reads them must do without"

// database lists the connection's properties (database.*), which are not
// carried over, on one line, with the URL that gives the relay the same
// connection, without its password.
func (d *fromDebezium) database() {
	var what []string
	for _, key := range d.conn.keys {
		if strings.HasPrefix(key, "database.") {
			d.used[key] = true
			what = append(what, d.shown(key))
		}
	}
	if len(what) == 0 {
		return
	}
	why := "the relay's connection is not in relay.yaml (whose examples keep the password out of the file): give it with " +
		"--postgres-url, CDC_RELAY_POSTGRES_URL or --postgres-url-file (a file holding the URL), for every command"
	if u := d.connectionURL(); u != "" {
		why += ", such as " + u + " with the password in PGPASSWORD or ~/.pgpass"
	}
	why += "; the role needs REPLICATION and the grants 'cdc-relay migrate --config relay.yaml --print-grants ROLE' prints"
	d.add(notCarried, strings.Join(what, ", "), why)
}

// connectionURL is the PostgreSQL URL of the connector's database.*
// properties, without the password: "" without a host.
func (d *fromDebezium) connectionURL() string {
	host := strings.TrimSpace(d.conn.values["database.hostname"])
	if host == "" {
		return ""
	}
	u := url.URL{Scheme: "postgres", Host: host}
	if port := strings.TrimSpace(d.conn.values["database.port"]); port != "" {
		u.Host = net.JoinHostPort(host, port)
	}
	if user := strings.TrimSpace(d.conn.values["database.user"]); user != "" {
		u.User = url.User(user)
	}
	if db := strings.TrimSpace(d.conn.values["database.dbname"]); db != "" {
		u.Path = "/" + db
	}
	q := url.Values{}
	for _, p := range []string{"sslmode", "sslrootcert", "sslcert", "sslkey"} {
		if v := strings.TrimSpace(d.conn.values["database."+p]); v != "" {
			q.Set(p, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// relayCompressions are kafka.compression's values, which Kafka's
// compression.type shares.
var relayCompressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// producerOverrides maps producer.override.compression.type to
// kafka.compression, and lists the other overrides.
func (d *fromDebezium) producerOverrides() {
	for _, key := range d.conn.keys {
		name, ok := strings.CutPrefix(key, "producer.override.")
		if !ok || d.used[key] {
			continue
		}
		v, _ := d.value(key)
		switch name {
		case "compression.type":
			c := strings.ToLower(strings.TrimSpace(v))
			if slices.Contains(relayCompressions, c) {
				d.top = append(d.top, yamlLine{"kafka: {compression: " + c + "}", key + "; set brokers: here too, or --kafka-brokers"})
			} else {
				d.add(cannotHonour, d.shown(key), "the relay compresses with none, gzip, snappy, lz4 or zstd (kafka.compression)")
			}
		case "partitioner.class":
			d.add(cannotHonour, d.shown(key), "the relay spreads keys over partitions as Kafka's default partitioner does (murmur2 of the key's bytes): "+
				"a key may land on another partition than this partitioner's, and its order across the switch be lost")
		default:
			d.add(notNeeded, d.shown(key), "a setting of the connector's producer: the relay's producer has its own (cdc-relay run --help)")
		}
	}
}

// otherTransforms lists the transforms other than the router, each with
// its properties and its predicate's, on one line.
func (d *fromDebezium) otherTransforms() {
	list := splitList(d.conn.values["transforms"])
	routerAt := slices.Index(list, d.router)
	for i, name := range list {
		if name == d.router {
			continue
		}
		prefix := "transforms." + name + "."
		var what []string
		for _, key := range d.conn.keys {
			if strings.HasPrefix(key, prefix) && !d.used[key] {
				d.used[key] = true
				what = append(what, d.shown(key))
			}
		}
		what = append(what, d.predicateProps(d.conn.values[prefix+"predicate"])...)
		if len(what) == 0 {
			what = []string{"transforms=" + d.conn.values["transforms"] + " (" + name + ")"}
		}
		where := "after the router, on its records"
		if i < routerAt {
			where = "before the router, on the change events it reads"
		}
		class := cmpOr(d.conn.values[prefix+"type"], "no type")
		d.add(cannotHonour, strings.Join(what, ", "), fmt.Sprintf("the transform %s (%s) runs %s; the relay applies none but the router's: "+
			"check what it changes (the topic, the key, the value, a header, the records it drops)", name, class, where))
	}
	for _, key := range d.conn.keys {
		if d.used[key] || !strings.HasPrefix(key, "transforms.") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(key, "transforms."), ".")
		d.used[key] = true
		d.add(notNeeded, d.shown(key), "the transform "+name+" is not in transforms: Kafka Connect does not run it")
	}
}

// theRest lists each property not accounted for yet, as
// debeziumProperties says.
func (d *fromDebezium) theRest() {
	for _, key := range d.conn.outer {
		d.add(notNeeded, key+" (beside config)", "the REST API's account of the connector: not its config")
	}
	for _, key := range d.conn.keys {
		if d.used[key] {
			continue
		}
		d.used[key] = true
		if d.conn.nulls[key] {
			d.add(notNeeded, key+"=null", "null is unset: the default applies")
			continue
		}
		kind, why := d.classify(key)
		d.add(kind, d.shown(key), why)
	}
}

// writeFindings writes the findings to w, by kind, each kind's lines in
// the input's order under a title naming source.
func writeFindings(w io.Writer, source string, findings []finding) {
	for _, kind := range []findingKind{cannotHonour, toCheck, notCarried, notNeeded} {
		var lines []string
		for _, f := range findings {
			if f.kind == kind {
				lines = append(lines, "  "+f.what+": "+f.why)
			}
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: %s:\n%s\n", source, findingTitles[kind], strings.Join(lines, "\n"))
	}
}

// yaml writes the relay.yaml.
func (d *fromDebezium) yaml() string {
	var b strings.Builder
	comment := func(indent, text string) {
		for _, line := range wrap(text, 76-len(indent)) {
			b.WriteString(indent + "# " + line + "\n")
		}
	}
	name := ""
	if d.conn.name != "" {
		name = " " + strconv.Quote(d.conn.name)
	}
	comment("", fmt.Sprintf("relay.yaml of the Debezium connector%s, made by `cdc-relay config from-debezium`: %s (connector.class) "+
		"with the outbox event router transforms.%s (transforms=%s, %stype=%s). "+
		"Each line names the connector's property it comes from, the router's without their prefix %s; "+
		"standard error listed the properties the relay cannot honour, should be checked, or does not need.", name, d.conn.values["connector.class"], d.router, d.conn.values["transforms"],
		d.routerPrefix, d.conn.values[d.routerPrefix+"type"], d.routerPrefix))
	for _, h := range d.header {
		comment("", h)
	}
	b.WriteString("#\n")
	comment("", "postgres_url is left out: give the connection with --postgres-url-file, --postgres-url or CDC_RELAY_POSTGRES_URL, "+
		"which keeps the password out of this file and out of `ps` (the connector's database.* are not carried over).")
	b.WriteString("#\n")
	connector := "NAME"
	if d.conn.name != "" {
		connector = d.conn.name
	}
	if d.takeover {
		comment("", "The switch: the relay takes over the connector's slot. Stop the connector (DELETE /connectors/"+connector+
			" on Kafka Connect), then 'cdc-relay migrate --config relay.yaml' and 'cdc-relay run --config relay.yaml': the relay sends "+
			"the events from the slot's confirmed position on, again those the connector sent but had not confirmed, as a restarted connector does. "+
			"To run the relay beside the connector first, make this file with --slot (docs/switching-from-debezium.md).")
	} else {
		comment("", "The switch (docs/switching-from-debezium.md): 'cdc-relay migrate --config relay.yaml' creates the relay's slot while the connector runs, "+
			"then 'cdc-relay run --config relay.yaml'; then stop the connector (DELETE /connectors/"+connector+
			" on Kafka Connect) and drop its slot once nothing else reads it. The events in between are sent by both, with the same id header.")
	}
	top := d.top
	if !slices.ContainsFunc(top, func(l yamlLine) bool { return strings.HasPrefix(l.code, "kafka:") }) {
		b.WriteString("#\n")
		comment("", "A connector's config names no Kafka brokers: set them here, or with --kafka-brokers (CDC_RELAY_KAFKA_BROKERS):")
		b.WriteString("# kafka: {brokers: [\"kafka-1:9092\", \"kafka-2:9092\"]}\n")
	}
	writeLines(&b, "", top)
	b.WriteString("tables:\n")
	for _, t := range d.tables {
		lines := append([]yamlLine{{"- table: " + yamlScalar(t), "table.include.list"}}, d.table...)
		if d.envelopeSchema {
			lines = append(lines, d.envelopeSchemaName(t))
		}
		for i := 1; i < len(lines); i++ {
			if lines[i].code != "" {
				lines[i].code = "  " + lines[i].code
			}
		}
		writeLines(&b, "  ", lines)
	}
	return b.String()
}

// envelopeSchemaName is table's envelope_schema_name line: the router
// names the envelope's schema after the table's change events' value
// schema, <topic.prefix>.<schema>.<table>.Value, with the routed value
// before .Value.
func (d *fromDebezium) envelopeSchemaName(table string) yamlLine {
	prefix, ok := d.value("topic.prefix")
	if !ok {
		prefix, _ = d.value("database.server.name")
	}
	name := strings.TrimSpace(prefix) + "." + table + ".{" + d.routeBy + "}.Value"
	return yamlLine{"envelope_schema_name: " + yamlQuoted(name),
		"the router's name of the envelope's schema (topic.prefix, the table, route.by.field's value), under JsonConverter with schemas"}
}

// writeLines writes lines at indent, their comments aligned after the
// longest code; a line without code is its comment alone, at the code's
// indent (two more within a table's entry).
func writeLines(b *strings.Builder, indent string, lines []yamlLine) {
	width := 0
	for _, l := range lines {
		width = max(width, len(l.code))
	}
	for _, l := range lines {
		switch {
		case l.code == "":
			inner := indent
			if strings.HasPrefix(lines[0].code, "- ") {
				inner += "  "
			}
			fmt.Fprintf(b, "%s# %s\n", inner, oneLine(l.comment))
		case l.comment == "":
			fmt.Fprintf(b, "%s%s\n", indent, l.code)
		default:
			fmt.Fprintf(b, "%s%-*s  # %s\n", indent, width, l.code, oneLine(l.comment))
		}
	}
}

// oneLine is s with its line breaks as spaces, for a comment.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// plainScalar is a YAML scalar that needs no quotes: it starts with a
// letter, a digit or _ and holds only those, '.', '-' and '/'.
var plainScalar = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)

// yamlScalar is s as a YAML scalar: plain when it can be, and not a word
// or a number YAML would read otherwise; else double-quoted.
func yamlScalar(s string) string {
	if plainScalar.MatchString(s) && !yamlSpecial(s) {
		return s
	}
	return yamlQuoted(s)
}

// yamlQuoted is s double-quoted, as YAML reads Go's quoting.
func yamlQuoted(s string) string { return strconv.Quote(s) }

// yamlSpecial reports whether a plain scalar would not be read as the
// string s: a boolean, a null, or a number.
func yamlSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true
	}
	return strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0o")
}
