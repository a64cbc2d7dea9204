package relay

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/republish"
)

// writtenFunc writes back the rows of source with ids as delivered.
type writtenFunc func(ctx context.Context, source string, ids []string) error

// checkWindows refuses a repair whose window on a table selects no row
// while the table holds rows written after the relay last saved its
// checkpoint (republish.Window.CheckGap).
func checkWindows(ctx context.Context, cfg Config, outs []*republish.Window) error {
	checkpoints := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	for _, r := range outs {
		if err := r.CheckGap(ctx, checkpoints, cfg.Slot); err != nil {
			return fatalIfMarked(err)
		}
	}
	return nil
}

// fatalIfMarked makes err fatal to the relay when republish marked it so
// (republish.FatalError): the operator must act.
func fatalIfMarked(err error) error {
	var fatal *republish.FatalError
	if errors.As(err, &fatal) {
		return fatalError{err}
	}
	return err
}
