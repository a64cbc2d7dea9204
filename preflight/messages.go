package preflight

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// MessagesMinVersion is the first PostgreSQL release, as
// server_version_num, whose pgoutput sends logical decoding messages (its
// messages option).
const MessagesMinVersion = 140000

// CheckMessages returns a problem when the server cannot send logical
// decoding messages, for a relay that has message sources: PostgreSQL
// before 14, whose pgoutput has no messages option (replication would
// fail at its start, naming an option the operator never set). The error
// is for a server that could not be asked.
func CheckMessages(ctx context.Context, q pgdb.Querier) (*Problem, error) {
	var num int
	var version string
	err := q.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('server_version')").Scan(&num, &version)
	if err != nil {
		return nil, fmt.Errorf("read the server's version: %w", err)
	}
	if num >= MessagesMinVersion {
		return nil, nil
	}
	return &Problem{Msg: fmt.Sprintf("messages need PostgreSQL 14 or later (pgoutput's messages option), and this server is %s: "+
		"upgrade it, or remove messages: from the config file / --message-prefix", version)}, nil
}

// CheckMessageSources refuses, for a relay with message sources, a server
// whose pgoutput cannot send them ([CheckMessages]: PostgreSQL before 14),
// with the problem's message as the error; a relay of tables only (no
// sources) asks nothing.
func CheckMessageSources(ctx context.Context, q pgdb.Querier, sources []decoder.MessageMapping) error {
	if len(sources) == 0 {
		return nil
	}
	p, err := CheckMessages(ctx, q)
	if err != nil {
		return err
	}
	if p != nil {
		return errors.New(p.Msg)
	}
	return nil
}
