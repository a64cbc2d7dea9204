package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// postgresURLFileUsage describes --postgres-url-file, which run, migrate
// and failed share.
const postgresURLFileUsage = "read the PostgreSQL connection string from this `file` (white space around it trimmed) instead of --postgres-url, " +
	"so that its password is not on the command line, where ps and /proc show it to every user; " +
	"set either this or --postgres-url (each also from its environment variable), not both"

// postgresURLRequired is the usage error for a command given neither.
const postgresURLRequired = "--postgres-url (or CDC_RELAY_POSTGRES_URL) is required, or --postgres-url-file (CDC_RELAY_POSTGRES_URL_FILE) naming a file that holds it"

// registerPostgresURLFile defines --postgres-url-file on fs.
func registerPostgresURLFile(fs *flag.FlagSet, file *string) {
	fs.StringVar(file, "postgres-url-file", "", postgresURLFileUsage)
}

// postgresURLFrom returns the connection string a command was given: url
// (--postgres-url or CDC_RELAY_POSTGRES_URL), or else the trimmed contents
// of file (--postgres-url-file or CDC_RELAY_POSTGRES_URL_FILE). Both set,
// wherever each comes from, is a usage error: neither silently wins. It
// returns "" when neither is set; the caller says what is required. An
// error never holds the file's contents.
func postgresURLFrom(url, file string) (string, error) {
	if file == "" {
		return url, nil
	}
	if url != "" {
		return "", usageError{"both --postgres-url and --postgres-url-file are set (on the command line or as CDC_RELAY_POSTGRES_URL and CDC_RELAY_POSTGRES_URL_FILE): set one"}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usageError{fmt.Sprintf("--postgres-url-file: %v", err)}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", usageError{fmt.Sprintf("--postgres-url-file %q is empty: it must hold the PostgreSQL connection string", file)}
	}
	return s, nil
}
