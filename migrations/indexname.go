package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// maxIdentifier is the longest name PostgreSQL keeps, in bytes
// (NAMEDATALEN - 1): it truncates a longer one silently.
const maxIdentifier = 63

// indexName is the name of table's index with suffix: table+suffix when
// it fits maxIdentifier bytes, as PostgreSQL keeps it; otherwise the
// table's name cut short, a hash of the whole name and suffix, which fits,
// keeps the suffix, and differs for two suffixes of one table. Both the
// build and the look-up of an invalid index use it, so they name the same
// index.
func indexName(table, suffix string) string {
	if len(table)+len(suffix) <= maxIdentifier {
		return table + suffix
	}
	sum := sha256.Sum256([]byte(table))
	hash := "_" + hex.EncodeToString(sum[:4])
	keep := maxIdentifier - len(suffix) - len(hash)
	for keep > 0 && !utf8.RuneStart(table[keep]) {
		keep-- // cut at a character's first byte
	}
	return table[:keep] + hash + suffix
}
