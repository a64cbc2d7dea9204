package migrations

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
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
func lookupPublishing(ctx context.Context, q Querier, publication string, p *Publication) error {
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
	p.Stamp = fmt.Sprintf("publication %s all=%t insert=%t; table %s; schema %s", pubXmin, all, p.Inserts, rowStamp(relOID, relXmin), rowStamp(nsOID, nil))
	return nil
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
