package relay

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/recovery"
	"github.com/cdc-relay/cdc-relay/replication"
)

// Recover is `cdc-relay recover` on cfg (see [recovery.Run]): it fills
// cfg's defaults, checks what recover needs of it (Validate, a slot name,
// a timestamp column in every table), connects as the relay does (the
// migrations checked), and repairs the gap in the WAL the relay read, or
// says why not. An error recovery marks fatal ([fatal.Error])
// is fatal to the relay too.
func Recover(ctx context.Context, cfg Config, opts recovery.Options) (recovery.Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkRecoverable(cfg); err != nil {
		return recovery.Result{}, err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return recovery.Result{}, err
	}
	defer pool.Close()
	res, err := recovery.Run(ctx, pool, cfg.recovery(), opts)
	return res, err
}

// recovery is what package recovery reads of c.
func (c Config) recovery() recovery.Config {
	return recovery.Config{Config: c.SlotConfig(), ReservedTopics: c.ReservedTopics(), Kafka: c.Kafka,
		Watch: c.publicationWatch(nil, c.Logger)}
}

// checkRecoverable checks what Recover needs of cfg before it connects:
// a valid mapping and slot name, and a timestamp column for every table.
func checkRecoverable(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return fmt.Errorf("%w: choose another --slot", err)
	}
	for _, t := range cfg.Tables {
		if t.Mapping.TimestampColumn == "" {
			return fmt.Errorf("recover finds the rows to publish again by the timestamp column, and none is mapped for %s.%s: set --timestamp-column (timestamp in a config file)",
				t.Mapping.Schema, t.Mapping.Table)
		}
		if ps := t.AllPublishers(); t.Mapping.IDColumn == "" && !slices.Equal(ps, outbox.DefaultPublishers()) {
			return fmt.Errorf("recover parks the rows of %s for its webhook publishers (%s), whose pollers read each row by its id column, and none is mapped: set id in the config file",
				t.Name(), strings.Join(slices.DeleteFunc(slices.Clone(ps), func(p string) bool { return p == outbox.KafkaPublisher }), ", "))
		}
	}
	return nil
}
