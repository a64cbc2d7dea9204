package migrations

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// emitPrefixMark precedes, in cdc_relay.emit's comment, the prefix the
// function writes, quoted as Go quotes a string.
const emitPrefixMark = "with the prefix "

// EmitPrefix reports the prefix that cdc_relay.emit, as [CreateEmit] made
// it, writes its messages with: ok is false, with no error, when the
// database has no such function or its comment names no prefix (a
// function not made by migrate). It reads one catalog row, so a relay
// can call it at start to warn when no message source maps the prefix.
func EmitPrefix(ctx context.Context, db pgdb.DB) (prefix string, ok bool, err error) {
	var comment *string
	err = db.QueryRow(ctx, `SELECT obj_description(to_regprocedure($1), 'pg_proc'), to_regprocedure($1) IS NOT NULL`,
		EmitFunction).Scan(&comment, &ok)
	if err != nil {
		return "", false, fmt.Errorf("read the prefix of %s from its comment: %w", EmitFunction, err)
	}
	if !ok || comment == nil {
		return "", false, nil
	}
	prefix, ok = prefixInComment(*comment)
	return prefix, ok, nil
}

// prefixInComment returns the quoted prefix that follows emitPrefixMark
// in comment, and whether there was one.
func prefixInComment(comment string) (string, bool) {
	i := strings.Index(comment, emitPrefixMark)
	if i < 0 {
		return "", false
	}
	quoted, err := strconv.QuotedPrefix(comment[i+len(emitPrefixMark):])
	if err != nil {
		return "", false
	}
	prefix, err := strconv.Unquote(quoted)
	if err != nil || prefix == "" {
		return "", false
	}
	return prefix, true
}
