package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/report"
)

// TestPrintStatus: the summary says what a person needs first: the role
// and readiness, why not ready, a pause and how to end it, and where to
// look at parked events.
func TestPrintStatus(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		st   report.Status
		want []string
		not  []string
	}{
		{"ready leader",
			report.Status{Version: "v1.2.3", Commit: "2b7a81f3da8a2fd289da1f12ae7bad2ad6f24b76", Role: report.RoleLeader, Ready: true, Slot: "cdc_relay", Table: "public.outbox", ConfirmedLSN: "0/16B3748",
				LagBytes: 0, WALRetainedBytes: 3 << 20, EventsRead: 10, EventsProduced: 10, DatabaseAt: now.Add(-3 * time.Second)},
			[]string{"cdc-relay v1.2.3 (commit 2b7a81f3da8a): leader, ready", "confirmed 0/16B3748", "lag 0 B; the slot keeps 3.0 MiB", "10 read, 10 produced", "0 FAILED", "3s ago"},
			[]string{"NOT READY", "PAUSED", "failed list", "why", "in flight committed"}},
		{"events in flight",
			report.Status{Role: report.RoleLeader, Ready: true, InFlightEvents: 5, LagSeconds: 1.5, LagBytes: 100},
			[]string{"the oldest event in flight committed 1.5s ago", "5 in flight"}, nil},
		{"paused, not ready, parked events",
			report.Status{Role: report.RoleLeader, NotReady: "Kafka does not answer: dial refused", Paused: true, Failed: 2, Dead: 1,
				LastError: "lost the leadership lock", LastErrorAt: now.Add(-time.Minute)},
			[]string{"leader, NOT READY", "PAUSED (POST /resume resumes)", "why         Kafka does not answer", "2 FAILED", "1 DEAD", "cdc-relay failed list", "lost the leadership lock (1m0s ago)"},
			nil},
		{"from the database",
			report.Status{Role: report.RoleNone, NotReady: "no relay answers at 127.0.0.1:7187", LagBytes: 2048, WALRetainedBytes: -1, Failed: 0, Dead: 0},
			[]string{"no relay answers; from the database", "lag 2.0 KiB", "keeps unknown"},
			[]string{"why", "read,", "failover", "slot loss"}},
		{"held events per topic",
			report.Status{Role: report.RoleLeader, Ready: true, Failed: 2, Dead: 1, EventsBehind: 9, InFlightEvents: 1, HeldTopics: 3,
				Topics: []report.TopicHeld{
					{Topic: "orders", Failed: 2, Dead: 1, Waiting: 3, Paused: 1, OldestHeldSeconds: 30.4},
					{Topic: "payments", Paused: 2, OldestHeldSeconds: 3600},
				}},
			[]string{"behind      9 events owed to Kafka", "held by topic:", "TOPIC     FAILED  DEAD  WAITING  PAUSED  OLDEST",
				"orders    2       1     3        1       30s", "payments  0       0     0        2       1h0m0s", "and 1 more topics", "cdc-relay failed list"},
			nil},
		{"only paused and waiting events",
			report.Status{Role: report.RoleNone, EventsBehind: 4, HeldTopics: 1, Topics: []report.TopicHeld{{Topic: "audit", Waiting: 2, Paused: 2, OldestHeldSeconds: 5}}},
			[]string{"0 FAILED (being retried), 0 DEAD (given up): cdc-relay failed list", "behind      4 events", "audit  0       0     2        2       5s"},
			[]string{"more topics"}},
		{"paused topics",
			report.Status{Role: report.RoleStandby, PausedTopics: []string{"audit", "orders"}},
			[]string{"paused      topics audit, orders (`cdc-relay resume --topic T` resumes one)"}, []string{"PAUSED (POST"}},
		{"topics paused for a webhook publisher, here and in a team's table",
			report.Status{Role: report.RoleStandby, PausedTopics: []string{"wallet"},
				PublishersPaused: []report.PublisherTopic{{Publisher: "partner", Topic: "orders"}, {Publisher: "partner", Topic: "wallet"}},
				PausedIn:         []report.TopicPausedIn{{Topic: "wallet", Table: "public.outbox_topic_progress", Publisher: "partner"}}},
			[]string{"paused      topics wallet (`cdc-relay resume --topic T` resumes one)",
				"paused      topics orders, wallet for publisher partner (`cdc-relay resume --topic T --publisher partner` resumes one)",
				"paused      topics wallet for publisher partner in public.outbox_topic_progress (its status column"},
			[]string{"PAUSED (POST"}},
		{"nothing held",
			report.Status{Role: report.RoleLeader, Ready: true, EventsBehind: 0},
			[]string{"0 FAILED"},
			[]string{"behind", "held by topic", "failed list", "backfill"}},
		{"PostgreSQL 16",
			report.Status{Role: report.RoleLeader, PostgresVersion: 160004, OnSlotLoss: "recover", SlotRecoveries: 1},
			[]string{"failover    none: PostgreSQL 16 has no failover slots", "slot loss   recover (--on-slot-loss); 1 gap(s)"}, nil},
		{"not a failover slot",
			report.Status{Role: report.RoleNone, PostgresVersion: 170002},
			[]string{"the slot is NOT a failover slot"}, []string{"slot loss"}},
		{"failover slot without synchronized_standby_slots",
			report.Status{Role: report.RoleLeader, PostgresVersion: 180006, FailoverSlot: true, OnSlotLoss: "refuse"},
			[]string{"failover slot; synchronized_standby_slots is NOT set", "slot loss   refuse"}, nil},
		{"a running backfill",
			report.Status{Role: report.RoleLeader, Backfills: []report.Backfill{{Table: "public.outbox", RunID: "2026-11-23T11:50:00Z", RowsPublished: 1200, RowsSelected: 3000,
				LastKey: "1200", StartedAt: now.Add(-10 * time.Minute), UpdatedAt: now.Add(-time.Second)}}},
			[]string{"backfill    public.outbox: 1200 of 3000 rows published, last key 1200; started 10m0s ago (run 2026-11-23T11:50:00Z), updated 1s ago"}, nil},
		{"failover slot",
			report.Status{Role: report.RoleLeader, PostgresVersion: 180006, FailoverSlot: true, SynchronizedStandbySlots: "standby_1"},
			[]string{"failover slot; synchronized_standby_slots = standby_1"}, []string{"NOT set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printStatus(&b, tt.st, now)
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("unexpected %q in\n%s", w, out)
				}
			}
		})
	}
}

// TestStatusAsksTheRelay: status reads GET /status at --metrics-addr, and
// --json prints what the relay said.
func TestStatusAsksTheRelay(t *testing.T) {
	want := report.Status{Role: report.RoleStandby, Ready: true, Slot: "s", Failed: 4, Dead: 0}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(want)
	}))
	defer ts.Close()
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"status", "--metrics-addr", strings.TrimPrefix(ts.URL, "http://"), "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got report.Status
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Role != want.Role || got.Failed != 4 {
		t.Errorf("status --json printed %s (%v), want %+v", out.String(), err, want)
	}
	out.Reset()
	if code := Main(context.Background(), []string{"status", "--metrics-addr", "127.0.0.1:1"}, &out, &errOut); code != statusNoRelay ||
		!strings.Contains(errOut.String(), "no relay answers at 127.0.0.1:1") || !strings.Contains(errOut.String(), "--postgres-url") {
		t.Errorf("status with no relay and no database: exit %d, %s", code, errOut.String())
	}
}

// TestStatusExitCodes: status exits 0 for a ready relay, paused or not, 1
// for one that is not ready, 3 when no relay answers, so that a health
// check needs nothing else; what is wrong is on stdout, as JSON with
// --json, and nothing more on stderr.
func TestStatusExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		st     *report.Status // nil: no relay answers
		json   bool
		code   int
		stdout string
		stderr string // "": stderr must be empty
	}{
		{"ready leader", &report.Status{Role: report.RoleLeader, Ready: true}, false, statusReady, "leader, ready", ""},
		{"ready standby", &report.Status{Role: report.RoleStandby, Ready: true}, false, statusReady, "standby, ready", ""},
		{"paused leader", &report.Status{Role: report.RoleLeader, Ready: true, Paused: true}, false, statusReady, "PAUSED", ""},
		{"not ready", &report.Status{Role: report.RoleLeader, NotReady: "Kafka does not answer: dial refused"}, false, statusNotReady, "why         Kafka does not answer", ""},
		{"not ready, JSON", &report.Status{Role: report.RoleStandby, NotReady: "starting"}, true, statusNotReady, `"not_ready": "starting"`, ""},
		{"no relay", nil, false, statusNoRelay, "", "no relay answers at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := "127.0.0.1:1"
			if tt.st != nil {
				ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(tt.st)
				}))
				defer ts.Close()
				addr = strings.TrimPrefix(ts.URL, "http://")
			}
			args := []string{"status", "--metrics-addr", addr}
			if tt.json {
				args = append(args, "--json")
			}
			var out, errOut bytes.Buffer
			code := Main(context.Background(), args, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) {
				t.Errorf("exit %d, want %d; stdout %q, want %q in it", code, tt.code, out.String(), tt.stdout)
			}
			if (tt.stderr == "" && errOut.Len() > 0) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.stderr)
			}
			if tt.json && !json.Valid(out.Bytes()) {
				t.Errorf("--json printed %q, not JSON", out.String())
			}
		})
	}
}

// TestNotARelay: status, pause and resume tell a server that is not a
// relay's (postgres_exporter's page on 9187, the default before 0.5.0; a
// 404 page) from a relay, and say to give the relay's --metrics-addr.
func TestNotARelay(t *testing.T) {
	clearEnv(t)
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		_, _ = w.Write([]byte("<html><head><title>Postgres Exporter</title></head></html>"))
	}))
	defer exporter.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	for _, ts := range []*httptest.Server{exporter, notFound} {
		addr := strings.TrimPrefix(ts.URL, "http://")
		for _, args := range [][]string{{"status"}, {"pause"}, {"resume", "--admin-token", "t"}} {
			code := 1
			if args[0] == "status" {
				code = statusNoRelay
			}
			runMain(context.Background(), t, append(args, "--metrics-addr", addr), code, nil,
				[]string{"no relay answers at " + addr, "not JSON: the server there is not a cdc-relay admin server", "give the relay's --metrics-addr"})
		}
	}
}

// TestDefaultMetricsAddr: run serves, and status, pause and resume ask, at
// defaultMetricsAddr; an error at that address says that it changed in 0.5.0.
func TestDefaultMetricsAddr(t *testing.T) {
	for name, fs := range map[string]*flag.FlagSet{
		"run": (&RunCommand{}).flags(), "status": (&StatusCommand{}).flags(),
		"pause": (&PauseCommand{}).flags(), "resume": (&PauseCommand{resume: true}).flags(),
	} {
		if got := fs.Lookup("metrics-addr").DefValue; got != defaultMetricsAddr {
			t.Errorf("%s --metrics-addr defaults to %q, want %q", name, got, defaultMetricsAddr)
		}
	}
	if got := giveMetricsAddr(defaultMetricsAddr); !strings.Contains(got, "the default --metrics-addr since 0.5.0 (it was 127.0.0.1:9187)") ||
		!strings.Contains(got, "CDC_RELAY_METRICS_ADDR") {
		t.Errorf("at the default address: %q", got)
	}
	if got := giveMetricsAddr("relay-1:7187"); got != "give the relay's --metrics-addr" {
		t.Errorf("at another address: %q", got)
	}
}
