package relay

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/status"
)

// TxBeginner begins transactions (*pgxpool.Pool and *pgx.Conn do).
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// adoptables are cfg's tables with pending values, as status.Adopt takes
// them.
func (c Config) adoptables() []status.Adoptable {
	var ts []status.Adoptable
	names := c.TableNames()
	for i, t := range c.Tables {
		if t.WriteBack == nil || len(t.WriteBack.Pending) == 0 {
			continue
		}
		ts = append(ts, status.Adoptable{Schema: t.Mapping.Schema, Name: t.Mapping.Table, Source: names[i],
			IDColumn: t.Mapping.IDColumn, StatusColumn: t.WriteBack.StatusColumn, Pending: t.WriteBack.Pending})
	}
	return ts
}

// snapshotName is what PostgreSQL names an exported snapshot
// (0000000A-0000001B-1); anything else is not quoted into SQL.
var snapshotName = regexp.MustCompile(`^[0-9A-Fa-f-]+$`)

// adoptBacklog is the switch-over: for each of cfg's tables with pending
// values, it parks the rows whose status was pending at snapshot (the one
// a new slot exported) in the status table, for the poller to send as
// they are then. One transaction on db that imports the snapshot: exactly
// the rows committed before the slot's consistent point, which the slot
// will not stream, and all of them or none. It logs and returns how many
// rows it adopted.
func adoptBacklog(ctx context.Context, db TxBeginner, cfg Config, snapshot string, log *slog.Logger) (int64, error) {
	tables := cfg.adoptables()
	if len(tables) == 0 {
		return 0, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !snapshotName.MatchString(snapshot) {
		return 0, fmt.Errorf("adopt the pending rows: the new slot exported no usable snapshot (%q)", snapshot)
	}
	store := status.NewStore(nil, cfg.StatusSchema, cfg.StatusTable)
	var total int64
	err := pgx.BeginTxFunc(ctx, db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+snapshot+"'"); err != nil {
			return fmt.Errorf("import the new slot's snapshot: %w", err)
		}
		for _, t := range tables {
			n, err := store.Adopt(ctx, tx, t)
			if err != nil {
				return err
			}
			log.Info("adopted the rows pending when the slot was created: the poller sends each as it is now",
				"table", t.Source, "rows", n, "pending", t.Pending)
			total += n
		}
		return nil
	})
	return total, err
}
