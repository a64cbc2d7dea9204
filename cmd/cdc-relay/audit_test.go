package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/audit"
)

// TestAuditText: the summary names each finding, and the verdict.
func TestAuditText(t *testing.T) {
	clean := auditText(audit.Result{Table: "public.outbox", Rows: 3, Expected: 3, Records: 3, Matched: 3, OrderColumn: "id"})
	for _, want := range []string{"audit of public.outbox: 3 row(s), 3 record(s) expected, 3 read (3 matched, 0 of other rows)",
		"0 missing, 0 duplicate(s), 0 on the wrong topic, 0 out of order; keys in the order of id", "every row's records are there"} {
		if !strings.Contains(clean, want) {
			t.Errorf("clean summary lacks %q:\n%s", want, clean)
		}
	}
	found := auditText(audit.Result{Table: "public.outbox", Elsewhere: 2, MissingCount: 3, TopicsAbsent: []string{"gone"}, DuplicateCount: 1, WrongTopicCount: 1, OutOfOrderCount: 1,
		Missing:    []audit.Missing{{ID: "1", Topic: "t", Key: "k"}, {ID: "2", Key: "k", Reason: "topic not allowed"}},
		Duplicates: []audit.Duplicate{{ID: "3", Topic: "t", Records: 2}},
		WrongTopic: []audit.WrongTopic{{ID: "4", Topic: "u", Offset: 7, Want: []string{"t"}}},
		OutOfOrder: []audit.OutOfOrder{{Topic: "t", Key: "k", Earlier: audit.Position{ID: "5", Offset: 9}, Later: audit.Position{ID: "6", Offset: 8}}}})
	for _, want := range []string{`missing: id 1 on t (key "k")`, "cannot become a record, the relay parks it DEAD: topic not allowed",
		"duplicate: id 3 on t: 2 records", "wrong topic: id 4 on u[0] at offset 7: its row goes to t",
		`out of order: key "k" on t: id 5 (t[0] offset 9) was committed before id 6 (t[0] offset 8)`,
		"order not checked", "(5 of them listed above", "2 row(s) go to other publishers than Kafka only", "topic gone does not exist"} {
		if !strings.Contains(found, want) {
			t.Errorf("summary lacks %q:\n%s", want, found)
		}
	}
	if strings.Contains(found, "every row's records are there") {
		t.Errorf("a summary with findings says all is there:\n%s", found)
	}
}

// TestAuditExitCodes: a usage error and a failure to connect exit 2 (1
// is for findings), and the URL's password is not printed.
func TestAuditExitCodes(t *testing.T) {
	for _, args := range [][]string{
		{"audit", "--since", "yesterday"},
		{"audit", "--since", "2026-11-30T09:00:00Z", "--until", "2026-11-30T08:00:00Z"},
		{"audit", "--postgres-url", "postgres://u:s3cret@127.0.0.1:1/x", "--kafka-brokers", "127.0.0.1:1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, stderr.String())
		}
		if strings.Contains(stderr.String()+stdout.String(), "s3cret") {
			t.Errorf("%q printed the password:\n%s", args, stderr.String())
		}
	}
}

// TestAuditPublishers: with --config, a table's rows are expected on the
// topics it sends to Kafka only, and a table that sends none there is
// refused (exit 2): the audit reads Kafka only.
func TestAuditPublishers(t *testing.T) {
	path := writeConfig(t, webhookConfig)
	for _, tc := range []struct {
		table    string
		err      string
		kafka    []string // topics KafkaSends reports; nil: no KafkaSends
		notKafka []string
	}{
		{"public.outbox", "--table public.outbox: " + path + " sends its events to partner only, not to Kafka; the audit reads Kafka only", nil, nil},
		{"public.events", "", []string{"wallet-events"}, []string{"other"}},
		{"public.audit", "", nil, nil},
	} {
		t.Run(tc.table, func(t *testing.T) {
			clearEnv(t)
			var stdout, stderr bytes.Buffer
			c := &AuditCommand{stdout: &stdout, stderr: &stderr}
			fs := c.flags()
			if err := parseFlags(fs, []string{"--config", path, "--table", tc.table, "--postgres-url", "postgres://relay@127.0.0.1:1/app", "--kafka-brokers", "k:9092"}); err != nil {
				t.Fatal(err)
			}
			err := c.finish(fs)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				code := Main(context.Background(), []string{"audit", "--config", path, "--table", tc.table, "--postgres-url", "postgres://relay@127.0.0.1:1/app", "--kafka-brokers", "k:9092"}, &stdout, &stderr)
				if code != 2 || !strings.Contains(stderr.String(), "the audit reads Kafka only") {
					t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c.opts.KafkaSends == nil) != (tc.kafka == nil) {
				t.Fatalf("KafkaSends set: %v", c.opts.KafkaSends != nil)
			}
			for _, topic := range tc.kafka {
				if !c.opts.KafkaSends(topic) {
					t.Errorf("KafkaSends(%s) = false", topic)
				}
			}
			for _, topic := range tc.notKafka {
				if c.opts.KafkaSends(topic) {
					t.Errorf("KafkaSends(%s) = true", topic)
				}
			}
		})
	}
}
