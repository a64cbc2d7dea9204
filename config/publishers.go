package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/internal/suggest"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// Publisher is an entry of publishers: a publisher beside Kafka's (which
// is outbox.KafkaPublisher, implicit), that tables and routes name.
type Publisher struct {
	// Name is its name: lower-case letters, digits, '_' and '-', starting
	// with a letter; never outbox.KafkaPublisher.
	Name string
	// Line is its line in the file.
	Line int
	// Webhook is its webhook section, valid ([webhook.Config.Validate]):
	// the only kind of publisher beside Kafka.
	Webhook *webhook.Config
}

// PublisherUse is where a table or a route names a publisher in its
// publishers list.
type PublisherUse struct {
	// Publisher is the name it names.
	Publisher string
	// Where is "tables[0]" or "tables[0].routes[1]".
	Where string
	// Table is the table's name, "schema.table" ("" when its entry names
	// none that is valid).
	Table string
	// Line is the list's line.
	Line int
}

// maxPublisherName bounds a publisher's name, which labels metrics.
const maxPublisherName = 63

// publisherKeys are the keys of a publisher: its kinds, one of which it
// has.
var publisherKeys = []knownKey[*Publisher]{
	{"webhook", nil}, // read by publisher, which places its problems
}

// webhookEntry is a publisher's webhook section while it is read.
type webhookEntry struct {
	c    webhook.Config
	line int            // the section's line
	at   map[string]int // key ("url", "tls.ca_file") → its line
}

// webhookKeys are the keys of a publisher's webhook section.
var webhookKeys = []knownKey[*webhookEntry]{
	{"url", text(func(w *webhookEntry) *string { return &w.c.URL })},
	{"method", text(func(w *webhookEntry) *string { return &w.c.Method })},
	{"headers", readWebhookHeaders},
	{"timeout", readWebhookTimeout},
	{"tls", readWebhookTLS},
	{"secret_file", text(func(w *webhookEntry) *string { return &w.c.SecretFile })},
	{"secret_env", text(func(w *webhookEntry) *string { return &w.c.SecretEnv })},
	{"batch_size", readWebhookBatchSize},
}

// webhookTLSKeys are the keys of a webhook's tls.
var webhookTLSKeys = []knownKey[*webhook.TLS]{
	{"ca_file", text(func(t *webhook.TLS) *string { return &t.CAFile })},
	{"cert_file", text(func(t *webhook.TLS) *string { return &t.CertFile })},
	{"key_file", text(func(t *webhook.TLS) *string { return &t.KeyFile })},
	{"server_name", text(func(t *webhook.TLS) *string { return &t.ServerName })},
}

// readPublishers reads publishers: a mapping of name to publisher.
func readPublishers(p *parser, e keyed, _ string, f *File) {
	if isNull(e.value) {
		return
	}
	const want = "a mapping of publisher name to publisher, such as {partner: {webhook: {url: https://partner.example/hooks, secret_file: /etc/cdc-relay/partner-secret}}}"
	n := e.value
	if n.Kind != yaml.MappingNode {
		p.problem(e.line, "publishers: want %s", want)
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || k.Value == "" {
			p.problem(k.Line, "publishers: want %s", want)
			continue
		}
		if first, ok := seen[k.Value]; ok {
			p.problem(k.Line, "publishers: publisher %q is defined twice (first on line %d): keep one", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		p.defined = append(p.defined, k.Value) // named, so that its uses are not unknown too
		if pub, ok := p.publisher(k, v); ok {
			f.Publishers = append(f.Publishers, pub)
		}
	}
}

// publisher reads the publisher named by k, whose value is v.
func (p *parser) publisher(k, v *yaml.Node) (Publisher, bool) {
	pub := Publisher{Name: k.Value, Line: k.Line}
	where := "publishers." + pub.Name
	if msg := publisherNameProblem(pub.Name); msg != "" {
		p.problem(k.Line, "%s: %s", where, msg)
		return pub, false
	}
	needs := fmt.Sprintf("%s needs webhook: the receiver's settings, such as {webhook: {url: https://partner.example/hooks, "+
		"secret_file: /etc/cdc-relay/%s-secret}} (webhook is the one kind of publisher beside kafka)", where, pub.Name)
	if isNull(v) {
		p.problem(k.Line, "%s", needs)
		return pub, false
	}
	before := len(p.problems)
	entries, ok := p.mapping(v, where, "a mapping with the publisher's kind, such as {webhook: {url: https://partner.example/hooks}}", names(publisherKeys))
	if !ok {
		return pub, false
	}
	for _, e := range entries {
		if e.key == "webhook" {
			pub.Webhook = p.webhookSection(e, where+".webhook")
		}
	}
	if pub.Webhook == nil && len(p.problems) == before {
		p.problem(k.Line, "%s", needs)
	}
	return pub, len(p.problems) == before
}

// publisherNameProblem says what is wrong with a publisher's name, or "".
func publisherNameProblem(name string) string {
	if strings.EqualFold(name, outbox.KafkaPublisher) {
		return "kafka is the name of the relay's Kafka producer (set under kafka:), which tables name without defining it: " +
			"name this publisher otherwise"
	}
	ok := len(name) <= maxPublisherName && name[0] >= 'a' && name[0] <= 'z'
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Sprintf("%q is not a publisher name: use lower-case letters, digits, _ and -, starting with a letter, "+
			"at most %d characters (it names the publisher in metrics and logs)", name, maxPublisherName)
	}
	return ""
}

// webhookSection reads a publisher's webhook section and checks it
// (webhook.Config.Validate), each problem at its key's line; nil when it
// has a problem.
func (p *parser) webhookSection(e keyed, where string) *webhook.Config {
	if isNull(e.value) {
		p.problem(e.line, "%s is empty: give the receiver's settings, at least url and secret_file (or secret_env)", where)
		return nil
	}
	entries, ok := p.mapping(e.value, where, "a mapping, such as {url: https://partner.example/hooks, secret_file: /etc/cdc-relay/partner-secret}",
		names(webhookKeys))
	if !ok {
		return nil
	}
	w := &webhookEntry{line: e.line, at: map[string]int{}}
	for _, k := range entries {
		w.at[k.key] = k.line
	}
	before := len(p.problems)
	read(p, entries, where+".", webhookKeys, w)
	if len(p.problems) > before {
		return nil // Validate would repeat what a key's reader said
	}
	if err := w.c.Validate(); err != nil {
		var joined interface{ Unwrap() []error }
		errs := []error{err}
		if errors.As(err, &joined) {
			errs = joined.Unwrap()
		}
		for _, err := range errs {
			var ke *webhook.KeyError
			if !errors.As(err, &ke) {
				p.problem(w.line, "%s: %v", where, err)
				continue
			}
			p.problem(w.lineOf(ke.Key), "%s.%s: %s", where, ke.Key, ke.Problem)
		}
		return nil
	}
	return &w.c
}

// lineOf is the line of key ("url", "tls.cert_file"), or the webhook
// section's when the key is not set.
func (w *webhookEntry) lineOf(key string) int {
	if l := w.at[key]; l > 0 {
		return l
	}
	return w.line
}

// readWebhookHeaders reads a webhook's headers: a mapping of header name
// to value.
func readWebhookHeaders(p *parser, e keyed, ctx string, w *webhookEntry) {
	n := e.value
	if isNull(n) {
		return
	}
	const want = "a mapping of header name to value, such as {X-Tenant: acme}"
	if n.Kind != yaml.MappingNode {
		p.problem(e.line, "%sheaders: want %s", ctx, want)
		return
	}
	w.c.Headers = map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || k.Value == "" {
			p.problem(k.Line, "%sheaders: want %s", ctx, want)
			continue
		}
		if _, dup := w.c.Headers[k.Value]; dup {
			p.problem(k.Line, "%sheaders: header %q is set twice: keep one", ctx, k.Value)
			continue
		}
		if v.Kind != yaml.ScalarNode || isNull(v) {
			// Not the value: it may be a token.
			p.problem(k.Line, "%sheaders: header %q needs a value, a single string", ctx, k.Value)
			continue
		}
		w.c.Headers[k.Value] = v.Value
	}
}

// readWebhookTimeout reads a webhook's timeout, a duration.
func readWebhookTimeout(p *parser, e keyed, ctx string, w *webhookEntry) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.problem(e.line, "%stimeout %q: want a duration, such as 10s (the default) or 1m30s", ctx, v)
		return
	}
	w.c.Timeout = d
}

// readWebhookBatchSize reads a webhook's batch_size, an integer.
func readWebhookBatchSize(p *parser, e keyed, ctx string, w *webhookEntry) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.problem(e.line, "%sbatch_size %q: want a number of events, from 0 to %d (0 or 1: each event alone)", ctx, v, webhook.MaxBatchSize)
		return
	}
	w.c.BatchSize = n
}

// readWebhookTLS reads a webhook's tls.
func readWebhookTLS(p *parser, e keyed, ctx string, w *webhookEntry) {
	if isNull(e.value) {
		return
	}
	where := strings.TrimSuffix(ctx, ".") + ".tls"
	entries, ok := p.mapping(e.value, where, "a mapping, such as {ca_file: /etc/cdc-relay/partner-ca.pem}", names(webhookTLSKeys))
	if !ok {
		return
	}
	for _, k := range entries {
		w.at["tls."+k.key] = k.line
	}
	read(p, entries, where+".", webhookTLSKeys, &w.c.TLS)
}

// publisherList reads a table's or a route's publishers: a list of
// names, none twice, not empty; null is nil. Each is recorded as a use,
// checked against the file's publishers once they are all read
// (checkPublisherUses).
func (p *parser) publisherList(e keyed, ctx, where, table string) []string {
	if isNull(e.value) {
		return nil
	}
	names, ok := p.list(e, ctx, "[kafka, partner]")
	if !ok {
		return nil
	}
	if len(names) == 0 {
		p.problem(e.line, "%spublishers is empty: list where the events go, such as [kafka, partner], or remove publishers (the default is [kafka])", ctx)
		return nil
	}
	for i, n := range names {
		if j := slices.Index(names[:i], n); j >= 0 {
			p.problem(e.line, "%spublishers: %q is listed twice (publishers[%d] and [%d]): an event goes to each publisher once; keep one", ctx, n, j, i)
			return nil
		}
		p.uses = append(p.uses, PublisherUse{Publisher: n, Where: where, Table: table, Line: e.line})
	}
	return names
}

// checkPublisherUses checks every publisher a table or a route names
// against those the file defines (and kafka), and warns of a publisher
// defined and named by none: no event would go to it.
func (p *parser) checkPublisherUses(f *File) {
	known := []string{outbox.KafkaPublisher}
	for _, name := range p.defined {
		if name != outbox.KafkaPublisher {
			known = append(known, name)
		}
	}
	used := map[string]bool{}
	for _, u := range p.uses {
		used[u.Publisher] = true
		if slices.Contains(known, u.Publisher) {
			continue
		}
		msg := fmt.Sprintf("unknown publisher %q in %s", u.Publisher, u.Where)
		if s := suggest.Closest(strings.ToLower(u.Publisher), known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			msg += fmt.Sprintf(" (known publishers: %s; define it under publishers:)", strings.Join(known, ", "))
		}
		p.problem(u.Line, "%s", msg)
	}
	for _, pub := range f.Publishers {
		if !used[pub.Name] {
			p.warn(pub.Line, "publishers.%s is named by no table or route: no event goes to it; add it to a table's or a route's publishers "+
				"(publishers: [kafka, %s]), or remove it", pub.Name, pub.Name)
		}
	}
	f.PublisherUses = p.uses
}

// WebhookUses returns the uses of f's webhook publishers, in the file's
// order: where the file sends events to a webhook.
func (f *File) WebhookUses() []PublisherUse {
	var out []PublisherUse
	for _, u := range f.PublisherUses {
		for _, pub := range f.Publishers {
			if pub.Name == u.Publisher && pub.Webhook != nil {
				out = append(out, u)
			}
		}
	}
	return out
}
