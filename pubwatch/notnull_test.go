package pubwatch

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtext"
)

// TestWithNotNull: a mapping with a json-with-schema converter is given
// its table's NOT NULL columns, through either kind of connection; the
// others read nothing and stay as they are.
func TestWithNotNull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := sharedPG.DB(t).URL()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE "Outbox Event" (id uuid NOT NULL, aggregateid text NOT NULL, dropped int NOT NULL, payload jsonb);
		ALTER TABLE "Outbox Event" DROP COLUMN dropped`); err != nil {
		t.Fatal(err)
	}
	schema := decoder.Mapping{Schema: "public", Table: "Outbox Event", KeyConverter: decoder.ConverterJSONWithSchema}
	headers := decoder.Mapping{Schema: "public", Table: "Outbox Event", HeaderConverter: decoder.ConverterJSONWithSchema}
	plain := decoder.Mapping{Schema: "public", Table: "no such table"}
	text, err := pgtext.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer text.Close(ctx)
	for name, ms := range map[string]func() ([]decoder.Mapping, error){
		"pgx": func() ([]decoder.Mapping, error) {
			return WithNotNull(ctx, conn, []decoder.Mapping{schema, plain, headers})
		},
		"text": func() ([]decoder.Mapping, error) {
			return WithNotNullText(ctx, text, []decoder.Mapping{schema, plain, headers})
		},
	} {
		got, err := ms()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := []string{"id", "aggregateid"}; !slices.Equal(got[0].NotNull, want) {
			t.Errorf("%s: NOT NULL columns %q, want %q", name, got[0].NotNull, want)
		}
		if want := []string{"id", "aggregateid"}; !slices.Equal(got[2].NotNull, want) {
			t.Errorf("%s: a mapping with a schema for its headers only: NOT NULL columns %q, want %q", name, got[2].NotNull, want)
		}
		if got[1].NotNull != nil {
			t.Errorf("%s: a mapping without a schema converter was given %q", name, got[1].NotNull)
		}
	}
}
