package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParsePort(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"", 9092, true},
		{"9092", 9092, true},
		{" 19092 ", 19092, true},
		{"1", 1, true},
		{"65535", 65535, true},
		{"0", 0, false},
		{"65536", 0, false},
		{"-1", 0, false},
		{"localhost:9092", 0, false},
		{"nine", 0, false},
	} {
		got, err := parsePort(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parsePort(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "1 to 65535") {
			t.Errorf("parsePort(%q): %v does not say what it wants", tt.in, err)
		}
	}
}

func TestToolArgs(t *testing.T) {
	if got, want := topicArgs(9093, []string{"--create", "--topic", "t1"}),
		[]string{"--bootstrap-server", "localhost:9093", "--create", "--topic", "t1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("topicArgs = %q, want %q", got, want)
	}
	if got, want := consumeArgs(9092, "outbox.event.order", []string{"--max-messages", "1"}),
		[]string{"--bootstrap-server", "localhost:9092", "--topic", "outbox.event.order", "--from-beginning",
			"--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
			"--command-property", "group.protocol=consumer", "--max-messages", "1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("consumeArgs = %q, want %q", got, want)
	}
	got := javaArgs("/c/libs", "/c/tools-log4j2.properties", topicClass, []string{"--list"})
	// The class path is the jars' directory with Java's wildcard, and the
	// class comes right after it, then its own arguments.
	i := indexOf(got, "-cp")
	if i < 0 || got[i+1] != filepath.Join("/c/libs", "*") || got[i+2] != topicClass ||
		!reflect.DeepEqual(got[i+3:], []string{"--list"}) {
		t.Errorf("javaArgs = %q", got)
	}
	if indexOf(got, "-Dlog4j2.configurationFile=/c/tools-log4j2.properties") < 0 {
		t.Errorf("javaArgs = %q: no log4j2 configuration", got)
	}
}

func TestBanner(t *testing.T) {
	b := banner(9092, "/tmp/cdc-relay-kafka-1", false)
	for _, want := range []string{"localhost:9092", "--kafka-brokers localhost:9092", "/tmp/cdc-relay-kafka-1, removed on exit",
		"make kafka-topics ARGS=--list", "make kafka-consume TOPIC=", "Ctrl-C"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q: %s", want, b)
		}
	}
	if strings.Contains(b, "\n") {
		t.Errorf("banner is more than one line: %s", b)
	}
	// Another port is named in the make commands, so that they reach it.
	b = banner(19092, "/data/kafka", true)
	for _, want := range []string{"--kafka-brokers localhost:19092", "make kafka-topics KAFKA_PORT=19092 ARGS=--list",
		"make kafka-consume KAFKA_PORT=19092 TOPIC=", "(data in /data/kafka)"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q: %s", want, b)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
