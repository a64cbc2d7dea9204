package suggest

import "testing"

func TestName(t *testing.T) {
	flags := []string{"kafka-brokers", "kafka-linger", "postgres-url", "slot", "stop-timeout", "table", "topic-column", "topic-template"}
	for in, want := range map[string]string{
		"kafka-broker":  "kafka-brokers",
		"postgres_url":  "postgres-url",
		"Postgres-URL":  "postgres-url",
		"slto":          "slot",
		"brokers":       "kafka-brokers",
		"timeout":       "stop-timeout",
		"topic":         "", // two flags contain it
		"xyzzy":         "",
		"v":             "",
		"kafka-lingerr": "kafka-linger",
	} {
		if got := Name(in, flags); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
