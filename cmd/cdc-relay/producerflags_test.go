package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cdc-relay/cdc-relay/sink"
)

// TestProducerSettingsFromTheConfigFile: kafka.compression and
// kafka.batch_max_bytes set their flags; a flag given wins; neither given,
// the defaults hold.
func TestProducerSettingsFromTheConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.yaml")
	yaml := "kafka: {brokers: [k:9092], compression: zstd, batch_max_bytes: 2000000}\n" +
		"tables:\n  - {table: public.outbox, value: payload, topic: orders}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		args      []string
		file      string
		codec     string
		batchSize int
	}{
		{"from the file", nil, path, "zstd", 2000000},
		{"a flag wins", []string{"--kafka-compression", "lz4"}, path, "lz4", 2000000},
		{"no file: the defaults", nil, "", "none", sink.DefaultBatchMaxBytes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cfg sink.Config
			var brokers string
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.StringVar(&brokers, "kafka-brokers", "", "")
			registerProducerFlags(fs, &cfg)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if _, err := loadConfig(fs, tt.file); err != nil {
				t.Fatal(err)
			}
			if cfg.Compression != tt.codec || cfg.BatchMaxBytes != tt.batchSize {
				t.Errorf("compression %q, batch size %d; want %q, %d", cfg.Compression, cfg.BatchMaxBytes, tt.codec, tt.batchSize)
			}
		})
	}
}
