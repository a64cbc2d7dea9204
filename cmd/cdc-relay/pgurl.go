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
// of file (--postgres-url-file or CDC_RELAY_POSTGRES_URL_FILE); see
// valueOrFile.
func postgresURLFrom(url, file string) (string, error) {
	return valueOrFile("postgres-url", url, file, "the PostgreSQL connection string")
}

// valueOrFile returns a secret given either as the value of flag --name
// (or its environment variable) or as the contents of the file that
// --name-file names, white space around it trimmed. Both set, wherever
// each comes from, is a usage error: neither silently wins. It returns ""
// when neither is set; the caller says what is required. An error never
// holds the file's contents; what says what the file must hold.
func valueOrFile(name, value, file, what string) (string, error) {
	if file == "" {
		return value, nil
	}
	fileFlag := name + "-file"
	if value != "" {
		return "", usageError{fmt.Sprintf("both --%s and --%s are set (on the command line or as %s and %s): set one",
			name, fileFlag, envName(name), envName(fileFlag))}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usageError{fmt.Sprintf("--%s: %v", fileFlag, err)}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", usageError{fmt.Sprintf("--%s %q is empty: it must hold %s", fileFlag, file, what)}
	}
	return s, nil
}
