package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/status"
)

// TestFailedPrintsThePublisher: list and show name a row's publisher only
// when a row is not Kafka's; a table of Kafka's rows prints as one whose
// rows do not say (before the status table knew publishers), byte for
// byte.
func TestFailedPrintsThePublisher(t *testing.T) {
	t.Setenv("COLUMNS", "120")
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	row := func(id int64, publisher string) status.Row {
		return status.Row{ID: id, Status: status.Failed, Attempts: 1, SourceTable: "public.outbox", Topic: "orders", EventID: "e-1",
			LastError: "MESSAGE_TOO_LARGE", NextAttemptAt: now.Add(time.Hour), Publisher: publisher}
	}
	unsaid := []status.Row{row(2, ""), row(1, "")}
	tests := []struct {
		name      string
		rows      []status.Row
		column    bool   // the table has a PUBLISHER column
		cells     string // a line of the table holds it, when column
		showsName bool   // show of the first row names its publisher
	}{
		{name: "Kafka's rows", rows: []status.Row{row(2, status.KafkaPublisher), row(1, status.KafkaPublisher)}},
		{name: "a webhook publisher's row beside Kafka's", rows: []status.Row{row(2, "partner"), row(1, status.KafkaPublisher)},
			column: true, cells: "public.outbox  partner    orders", showsName: true},
		{name: "Kafka's row beside a webhook publisher's", rows: []status.Row{row(2, status.KafkaPublisher), row(1, "partner")},
			column: true, cells: "public.outbox  kafka      orders"},
	}
	var before bytes.Buffer
	if err := writeTable(&before, unsaid, now); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list, show bytes.Buffer
			if err := writeTable(&list, tt.rows, now); err != nil {
				t.Fatal(err)
			}
			if err := writeRecord(&show, tt.rows[0], now); err != nil {
				t.Fatal(err)
			}
			head, _, _ := strings.Cut(list.String(), "\n")
			switch {
			case !tt.column && list.String() != before.String():
				t.Errorf("list of Kafka's rows:\n%s\nwant it as before publishers:\n%s", list.String(), before.String())
			case tt.column && (!strings.Contains(head, "TABLE          PUBLISHER  TOPIC") || !strings.Contains(list.String(), tt.cells)):
				t.Errorf("list:\n%s\nwant a PUBLISHER column after TABLE, a line holding %q", list.String(), tt.cells)
			}
			if named := strings.Contains(show.String(), "publisher:"); named != tt.showsName {
				t.Errorf("show:\n%s\nnames the publisher %v, want %v", show.String(), named, tt.showsName)
			}
		})
	}
}
