package republish

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestEpochUnitJudgedByOldestAndNewest: recover judges a bigint timestamp
// column's unit by its oldest and its newest value; when they disagree
// (one row of microseconds among milliseconds) it refuses, naming both
// and the setting, rather than select no row of the window.
func TestEpochUnitJudgedByOldestAndNewest(t *testing.T) {
	t.Parallel()
	ctx, _, conn := sharedPG.ConnectDB(t, 5*time.Minute, `CREATE TABLE ev (id bigserial, at bigint)`)
	r := &Window{conn: conn.PgConn(), table: `"public"."ev"`}
	m := decoder.DefaultMapping()
	m.TimestampColumn = "at"
	now := time.Now()
	for _, tc := range []struct {
		name   string
		values []int64
		want   decoder.TimestampUnit
		refuse string
	}{
		{"milliseconds", []int64{now.Add(-time.Hour).UnixMilli(), now.UnixMilli()}, decoder.UnitMillis, ""},
		{"one row of microseconds", []int64{now.Add(-time.Hour).UnixMilli(), now.UnixMicro()}, "", "its oldest value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := conn.Exec(ctx, "TRUNCATE ev"); err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.values {
				if _, err := conn.Exec(ctx, "INSERT INTO ev (at) VALUES ($1)", v); err != nil {
					t.Fatal(err)
				}
			}
			unit, err := r.epochUnit(ctx, m, "at", slog.New(slog.DiscardHandler))
			if tc.refuse == "" {
				if err != nil || unit != tc.want {
					t.Fatalf("unit %q, %v; want %q", unit, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), "timestamp_unit") {
				t.Fatalf("unit %q, %v; want a refusal naming %q and timestamp_unit", unit, err, tc.refuse)
			}
		})
	}
}
