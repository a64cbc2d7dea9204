package migrations

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// publishingSQL reads, for publication $1 and the table of OID $2 (0 for
// none), the publication's options, the pg_publication_rel row of the
// table and the pg_publication_namespace row of its schema, with the row
// filter and column list of the table's row; {namespace}, {join},
// {filter}, {columns} and {hidden} are those of PostgreSQL 15+ or of
// earlier versions (which have none of them). A row filter or column list is read
// only where PostgreSQL applies it: not when the publication publishes
// all tables or the table's schema.
const publishingSQL = `SELECT p.pubinsert, p.puballtables, p.xmin::text, r.oid, r.xmin::text, {namespace},
	{filter}, {columns}, {hidden}
	FROM pg_publication AS p
	LEFT JOIN pg_publication_rel AS r ON r.prpubid = p.oid AND r.prrelid = $2::oid
	{join}
	WHERE p.pubname = $1`

// publishingFor returns publishingSQL for a server of server_version_num
// version.
func publishingFor(version int) string {
	if version < 150000 {
		// No schema publications, row filters or column lists.
		return strings.NewReplacer("{namespace}", "NULL::oid", "{join}", "", "{filter}", "NULL::text",
			"{columns}", "NULL::text[]", "{hidden}", "NULL::text[]").Replace(publishingSQL)
	}
	return strings.NewReplacer(
		"{namespace}", "n.oid",
		"{join}", "LEFT JOIN pg_publication_namespace AS n ON n.pnpubid = p.oid AND n.pnnspid = (SELECT relnamespace FROM pg_class WHERE oid = $2::oid)",
		"{filter}", "CASE WHEN p.puballtables OR n.oid IS NOT NULL THEN NULL ELSE pg_get_expr(r.prqual, r.prrelid) END",
		"{columns}", `CASE WHEN p.puballtables OR n.oid IS NOT NULL OR r.prattrs IS NULL THEN NULL ELSE
		ARRAY(SELECT attname::text FROM pg_attribute WHERE attrelid = r.prrelid AND attnum = ANY (r.prattrs::int2[]) ORDER BY attnum) END`,
		"{hidden}", `CASE WHEN p.puballtables OR n.oid IS NOT NULL OR r.prattrs IS NULL THEN NULL ELSE
		ARRAY(SELECT attname::text FROM pg_attribute WHERE attrelid = r.prrelid AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
			AND attnum <> ALL (r.prattrs::int2[]) ORDER BY attnum) END`,
	).Replace(publishingSQL)
}

// lookupPublishing reads what an existing publication publishes of the
// outbox table p.TableOID into p: Inserts, RowFilter, Columns, Hidden and
// Stamp.
func lookupPublishing(ctx context.Context, q pgdb.DB, publication string, p *Publication) error {
	sql := publishingFor(p.ServerVersion)
	var all bool
	var pubXmin string
	var relOID, nsOID *uint32
	var relXmin, filter *string
	err := q.QueryRow(ctx, sql, publication, p.TableOID).
		Scan(&p.Inserts, &all, &pubXmin, &relOID, &relXmin, &nsOID, &filter, &p.Columns, &p.Hidden)
	if err != nil {
		return fmt.Errorf("look up what publication %q publishes: %w", publication, err)
	}
	if filter != nil {
		p.RowFilter = *filter
	}
	p.Stamp = strings.Join([]string{fmt.Sprintf("publication %s all=%t insert=%t", pubXmin, all, p.Inserts),
		"table " + rowStamp(relOID, relXmin), "schema " + rowStamp(nsOID, nil)}, stampSep)
	return nil
}

// stampSep separates the parts of a stamp, in the order of stampParts.
const stampSep = "; "

// stampParts say what each part of a stamp stands for.
func stampParts() []string {
	return []string{
		"the publication's own row (its publish or publish_via_partition_root option, FOR ALL TABLES, its owner or name)",
		"the table's entry in it (the table removed and added back, a row filter or a column list set or removed)",
		"its entry for the table's schema (FOR TABLES IN SCHEMA)",
	}
}

// ChangedSince says which catalog rows of the stamp changed since the
// stamp old, as words for the operator; "" when p.Stamp is old.
func (p Publication) ChangedSince(old string) string {
	if p.Stamp == old {
		return ""
	}
	was, now := strings.Split(old, stampSep), strings.Split(p.Stamp, stampSep)
	var changed []string
	for i, what := range stampParts() {
		if i >= len(was) || i >= len(now) || was[i] != now[i] {
			changed = append(changed, what)
		}
	}
	return strings.Join(changed, ", and ")
}

// rowStamp is a catalog row's part of a stamp: its oid and, when given,
// its xmin; "none" for no row.
func rowStamp(oid *uint32, xmin *string) string {
	switch {
	case oid == nil:
		return "none"
	case xmin == nil:
		return fmt.Sprint(*oid)
	}
	return fmt.Sprintf("%d/%s", *oid, *xmin)
}

// RepublishFix is the statement that makes publication pub publish every
// row and column of table schema.table again, dropping its row filter and
// column list: the table dropped from the publication and added back in
// one transaction, so that no insert falls between the two.
func RepublishFix(pub, schema, table string) string {
	p, t := pgx.Identifier{pub}.Sanitize(), pgx.Identifier{schema, table}.Sanitize()
	return fmt.Sprintf("BEGIN; ALTER PUBLICATION %s DROP TABLE %s; ALTER PUBLICATION %s ADD TABLE %s; COMMIT", p, t, p, t)
}

// Hides lists the columns of want that p's column list leaves out of the
// table, in want's order; none when it publishes every column.
func (p Publication) Hides(want []string) []string {
	var out []string
	for _, c := range want {
		if slices.Contains(p.Hidden, c) {
			out = append(out, c)
		}
	}
	return out
}
