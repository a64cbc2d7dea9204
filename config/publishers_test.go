package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/webhook"
)

// issueExample is issue 48's example: a webhook publisher beside Kafka on
// a route of one table and on another table.
const issueExample = `kafka: {brokers: ["kafka:9092"]}
publishers:
  partner:
    webhook:
      url: https://partner.example/hooks/wallet
      secret_file: /etc/cdc-relay/partner-secret
      timeout: 5s
tables:
  - table: public.events
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id], publishers: [kafka, partner]}
      - {topic: payment-events, any_of_tags: [payment_id]}
  - table: public.outbox
    value: payload
    topic: "outbox.event.{aggregate_type}"
    publishers: [kafka, partner]
`

func TestParsePublishers(t *testing.T) {
	f, err := Parse("relay.yaml", []byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	want := []Publisher{{Name: "partner", Line: 3, Webhook: &webhook.Config{
		URL: "https://partner.example/hooks/wallet", SecretFile: "/etc/cdc-relay/partner-secret", Timeout: 5 * time.Second}}}
	if !reflect.DeepEqual(f.Publishers, want) {
		t.Errorf("publishers:\n got %+v\nwant %+v", f.Publishers, want)
	}
	events, outbox := f.Tables[0], f.Tables[1]
	if events.Publishers != nil || !reflect.DeepEqual(events.RoutePublishers, [][]string{{"kafka", "partner"}, nil}) {
		t.Errorf("public.events: publishers %q, routes' %q", events.Publishers, events.RoutePublishers)
	}
	if got := events.RoutePublishersOf(1); !reflect.DeepEqual(got, []string{"kafka"}) {
		t.Errorf("public.events: routes[1] goes to %q, want kafka alone", got)
	}
	if !reflect.DeepEqual(outbox.Publishers, []string{"kafka", "partner"}) || outbox.RoutePublishers != nil {
		t.Errorf("public.outbox: publishers %q, routes' %q", outbox.Publishers, outbox.RoutePublishers)
	}
	uses := []PublisherUse{
		{Publisher: "kafka", Where: "tables[0].routes[0]", Table: "public.events", Line: 13},
		{Publisher: "partner", Where: "tables[0].routes[0]", Table: "public.events", Line: 13},
		{Publisher: "kafka", Where: "tables[1]", Table: "public.outbox", Line: 18},
		{Publisher: "partner", Where: "tables[1]", Table: "public.outbox", Line: 18},
	}
	if !reflect.DeepEqual(f.PublisherUses, uses) {
		t.Errorf("uses:\n got %+v\nwant %+v", f.PublisherUses, uses)
	}
	if got := f.WebhookUses(); !reflect.DeepEqual(got, []PublisherUse{uses[1], uses[3]}) {
		t.Errorf("webhook uses: %+v", got)
	}
	if f.Warnings != nil {
		t.Errorf("warnings: %v", f.Warnings)
	}
	if s := f.String(); !strings.Contains(s, "publishers: [partner]") {
		t.Errorf("String = %s", s)
	}
}

func TestParseWebhookKeys(t *testing.T) {
	const yaml = `publishers:
  partner:
    webhook:
      url: https://partner.example/hooks
      method: PUT
      headers: {Authorization: Bearer abc, X-Tenant: 7}
      timeout: 1m30s
      tls: {ca_file: ca.pem, cert_file: c.pem, key_file: k.pem, server_name: partner.internal}
      secret_env: PARTNER_SECRET
      batch_size: 50
tables:
  - {table: t, value: v, topic: x, publishers: [partner]}
`
	f, err := Parse("relay.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	want := &webhook.Config{URL: "https://partner.example/hooks", Method: "PUT",
		Headers: map[string]string{"Authorization": "Bearer abc", "X-Tenant": "7"}, Timeout: 90 * time.Second,
		TLS:       webhook.TLS{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem", ServerName: "partner.internal"},
		SecretEnv: "PARTNER_SECRET", BatchSize: 50}
	if got := f.Publishers[0].Webhook; !reflect.DeepEqual(got, want) {
		t.Errorf("webhook:\n got %+v\nwant %+v", got, want)
	}
	if got := f.Tables[0].AllPublishers(); !reflect.DeepEqual(got, []string{"partner"}) {
		t.Errorf("the table's publishers %q, want partner alone", got)
	}
}

func TestParsePublisherProblems(t *testing.T) {
	const table = "tables:\n  - {table: t, value: v, topic: x, publishers: [kafka, partner]}\n"
	const partner = "publishers:\n  partner:\n    webhook: {url: https://partner.example/hooks, secret_file: /s}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // "line: message" of each problem
	}{
		{name: "the issue's misspelling", yaml: strings.Replace(issueExample, "[kafka, partner]}", "[kafka, partnr]}", 1),
			want: []string{`13: unknown publisher "partnr" in tables[0].routes[0] (did you mean "partner"?)`}},
		{name: "nothing like it", yaml: partner + "tables:\n  - {table: t, value: v, topic: x, publishers: [analytics]}\n",
			want: []string{`5: unknown publisher "analytics" in tables[0] (known publishers: kafka, partner; define it under publishers:)`}},
		{name: "undefined", yaml: table, want: []string{`2: unknown publisher "partner" in tables[0] (known publishers: kafka; define it under publishers:)`}},
		{name: "twice", yaml: partner + "tables:\n  - {table: t, value: v, topic: x, publishers: [partner, kafka, partner]}\n",
			want: []string{`5: tables[0] (public.t): publishers: "partner" is listed twice (publishers[0] and [2]): an event goes to each publisher once; keep one`}},
		{name: "empty", yaml: partner + "tables:\n  - {table: t, value: v, topic: x, publishers: []}\n",
			want: []string{`5: tables[0] (public.t): publishers is empty: list where the events go, such as [kafka, partner], or remove publishers (the default is [kafka])`}},
		{name: "not a list", yaml: partner + "tables:\n  - {table: t, value: v, topic: x, publishers: partner}\n",
			want: []string{`5: tables[0] (public.t): publishers: want a list, such as [kafka, partner]`}},
		{name: "a route's, empty", yaml: strings.Replace(issueExample, "any_of_tags: [payment_id]}", "any_of_tags: [payment_id], publishers: []}", 1),
			want: []string{`14: tables[0] (public.events): routes[1].publishers is empty: list where the events go, such as [kafka, partner], or remove publishers (the default is [kafka])`}},
		{name: "kafka defined", yaml: "publishers:\n  kafka:\n    webhook: {url: https://k/, secret_file: /s}\n" + table,
			want: []string{`2: publishers.kafka: kafka is the name of the relay's Kafka producer (set under kafka:), which tables name without defining it: name this publisher otherwise`,
				`5: unknown publisher "partner" in tables[0] (known publishers: kafka; define it under publishers:)`}},
		{name: "a bad name", yaml: "publishers:\n  Partner One:\n    webhook: {url: https://k/, secret_file: /s}\n" + table,
			want: []string{`2: publishers.Partner One: "Partner One" is not a publisher name: use lower-case letters, digits, _ and -, starting with a letter, at most 63 characters (it names the publisher in metrics and logs)`,
				`5: unknown publisher "partner" in tables[0] (known publishers: kafka, Partner One; define it under publishers:)`}},
		{name: "defined twice", yaml: partner + "  partner:\n    webhook: {url: https://other/, secret_file: /s}\n" + table,
			want: []string{`4: publishers: publisher "partner" is defined twice (first on line 2): keep one`}},
		{name: "no kind", yaml: "publishers:\n  partner: {}\n" + table,
			want: []string{`2: publishers.partner needs webhook: the receiver's settings, such as {webhook: {url: https://partner.example/hooks, secret_file: /etc/cdc-relay/partner-secret}} (webhook is the one kind of publisher beside kafka)`}},
		{name: "null", yaml: "publishers:\n  partner:\n" + table,
			want: []string{`2: publishers.partner needs webhook: the receiver's settings, such as {webhook: {url: https://partner.example/hooks, secret_file: /etc/cdc-relay/partner-secret}} (webhook is the one kind of publisher beside kafka)`}},
		{name: "a misspelled kind", yaml: "publishers:\n  partner:\n    webhok: {url: https://k/}\n" + table,
			want: []string{`3: unknown key "webhok" in publishers.partner (did you mean "webhook"?)`}},
		{name: "publishers not a mapping", yaml: "publishers: [partner]\n" + table,
			want: []string{`1: publishers: want a mapping of publisher name to publisher, such as {partner: {webhook: {url: https://partner.example/hooks, secret_file: /etc/cdc-relay/partner-secret}}}`,
				`3: unknown publisher "partner" in tables[0] (known publishers: kafka; define it under publishers:)`}},
		{name: "Debezium's converters beside a webhook", yaml: partner + "tables:\n  - {table: t, value: v, topic: x, publishers: [kafka, partner], value_converter: json}\n",
			want: []string{`5: tables[0] (public.t): value_converter shapes Kafka records as Debezium's outbox router does, and the table's events go to the webhook publisher partner too, which would receive them so: send this table to Kafka only, or remove value_converter`}},
		{name: "a message source's", yaml: partner + "messages:\n  - {prefix: outbox, publishers: [partner]}\n" + table,
			want: []string{`5: messages[0] (outbox): publishers: a message source goes to Kafka only in this version: remove publishers`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkProblems(t, tc.yaml, tc.want) })
	}
}

func TestParseWebhookProblems(t *testing.T) {
	const table = "tables:\n  - {table: t, value: v, topic: x, publishers: [partner]}\n"
	hook := func(lines ...string) string {
		return "publishers:\n  partner:\n    webhook:\n      " + strings.Join(lines, "\n      ") + "\n" + table
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{name: "empty", yaml: "publishers:\n  partner:\n    webhook:\n" + table,
			want: []string{`3: publishers.partner.webhook is empty: give the receiver's settings, at least url and secret_file (or secret_env)`}},
		{name: "no url, no secret", yaml: hook("method: POST"),
			want: []string{`3: publishers.partner.webhook.url: missing: set the receiver's URL, as https://partner.example/hooks`,
				`3: publishers.partner.webhook.secret_file: missing: every request is signed; set secret_file (a file holding the secret, whsec_<base64>) or secret_env (the environment variable holding it)`}},
		{name: "a key's line", yaml: hook("url: https://p.example/h", "secret_file: /s", "method: GET"),
			want: []string{`6: publishers.partner.webhook.method: "GET" is not a method a webhook is sent with: want POST (the default), PUT or PATCH, in capitals`}},
		{name: "tls's lines", yaml: hook("url: https://p.example/h", "secret_file: /s", "tls:", "  cert_file: c.pem", "  server_name: p"),
			want: []string{`7: publishers.partner.webhook.tls.cert_file: needs tls.key_file: a client certificate goes with its private key`}},
		{name: "tls over http", yaml: hook("url: http://p.example/h", "secret_file: /s", "tls: {ca_file: ca.pem}"),
			want: []string{`6: publishers.partner.webhook.tls: is set but url http://p.example/h is http: use an https URL, or remove tls`}},
		{name: "an unknown key", yaml: hook("url: https://p.example/h", "secret_file: /s", "retries: 3"),
			want: []string{`6: unknown key "retries" in publishers.partner.webhook (known keys: url, method, headers, timeout, tls, secret_file, secret_env, batch_size)`}},
		{name: "an unknown tls key", yaml: hook("url: https://p.example/h", "secret_file: /s", "tls: {ca-file: ca.pem}"),
			want: []string{`6: unknown key "ca-file" in publishers.partner.webhook.tls (did you mean "ca_file"?)`}},
		{name: "a timeout", yaml: hook("url: https://p.example/h", "secret_file: /s", "timeout: 5"),
			want: []string{`6: publishers.partner.webhook.timeout "5": want a duration, such as 10s (the default) or 1m30s`}},
		{name: "a batch size", yaml: hook("url: https://p.example/h", "secret_file: /s", "batch_size: ten"),
			want: []string{`6: publishers.partner.webhook.batch_size "ten": want a number of events, from 0 to 1000 (0 or 1: each event alone)`}},
		{name: "a batch size too large", yaml: hook("url: https://p.example/h", "secret_file: /s", "batch_size: 5000"),
			want: []string{`6: publishers.partner.webhook.batch_size: 5000 is not from 0 to 1000: 0 or 1 sends each event alone, N a JSON array of up to N events`}},
		{name: "a reserved header", yaml: hook("url: https://p.example/h", "secret_file: /s", "headers: {Content-Type: text/plain}"),
			want: []string{`6: publishers.partner.webhook.headers: Content-Type is set by the relay itself on every request (the Standard Webhooks headers, content-type from the event, and HTTP's own): remove it`}},
		{name: "a header without value", yaml: hook("url: https://p.example/h", "secret_file: /s", "headers: {Authorization: [a, b]}"),
			want: []string{`6: publishers.partner.webhook.headers: header "Authorization" needs a value, a single string`}},
		{name: "the secret in its file's place", yaml: hook("url: https://p.example/h", "secret_file: whsec_c2VjcmV0LW9mLXRoZS13ZWJob29rLXRlc3RzLTMyYnk="),
			want: []string{`5: publishers.partner.webhook.secret_file: holds a secret, not a file name: put the secret in a file readable by the relay only and name the file`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkProblems(t, tc.yaml, tc.want) })
	}
}

// TestWebhookProblemsShowNoSecret: no problem shows a header's value, the
// URL's query or user information, or a secret in a secret's place.
func TestWebhookProblemsShowNoSecret(t *testing.T) {
	const yaml = `publishers:
  partner:
    webhook:
      url: ftp://user-s3cret:pass-s3cret@partner.example/hooks?token=tok-s3cret
      headers: {Authorization: "Bearer hdr-s3cret\n", "bad name": "x-s3cret"}
      secret_env: whsec_c2VjcmV0LW9mLXRoZS13ZWJob29rLXRlc3RzLTMyYnk=
tables:
  - {table: t, value: v, topic: x, publishers: [partner]}
`
	_, err := Parse("relay.yaml", []byte(yaml))
	if err == nil {
		t.Fatal("no problem")
	}
	for _, s := range []string{"s3cret", "c2VjcmV0"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("a problem shows %q:\n%v", s, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("%d problems, want 4 (url, two headers, secret_env):\n%v", n, err)
	}
}

// TestWarnsOfAnUnusedPublisher: a publisher that no table or route names
// is accepted with a warning at its line.
func TestWarnsOfAnUnusedPublisher(t *testing.T) {
	yaml := strings.ReplaceAll(issueExample, "publishers: [kafka, partner]", "publishers: [kafka]")
	f, err := Parse("relay.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	want := "relay.yaml:3: publishers.partner is named by no table or route: no event goes to it; add it to a table's or a route's publishers " +
		"(publishers: [kafka, partner]), or remove it"
	if f.Warnings.Error() != want {
		t.Errorf("warnings:\n%v\nwant:\n%s", f.Warnings, want)
	}
	if f.WebhookUses() != nil {
		t.Errorf("webhook uses %+v, want none", f.WebhookUses())
	}
}

// checkProblems parses yaml and checks that it fails with want, each
// "line: message", in order.
func checkProblems(t *testing.T, yaml string, want []string) {
	t.Helper()
	f, err := Parse("relay.yaml", []byte(yaml))
	if f != nil || err == nil {
		t.Fatalf("no problem, want %q", want)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T, want Problems: %v", err, err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Msg))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
}
