// Command licenses writes docs/DEPENDENCIES.md: every module linked into
// the cdc-relay binary for the release targets, with its license, and
// fails, naming the module, when a license does not allow distributing
// the binary under the Apache License 2.0. Run it from the repository's
// root (`make licenses`):
//
//	go run ./scripts/licenses                          # writes docs/DEPENDENCIES.md
//	go run ./scripts/licenses -notices THIRD_PARTY_NOTICES
//
// With -notices it writes the license texts (and NOTICE files) to that
// path instead of the report.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/cdc-relay/cdc-relay/internal/licenses"
)

func main() {
	report := flag.String("o", "docs/DEPENDENCIES.md", "the report to write")
	notices := flag.String("notices", "", "write the license texts and NOTICE files to this path instead of the report")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *report, *notices)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "licenses:", err)
		os.Exit(1)
	}
}

// run collects the modules of ./cmd/cdc-relay, refuses a license that is
// not allowed, and writes the report, or the notices when notices is set.
func run(ctx context.Context, report, notices string) error {
	entries, err := licenses.Collect(ctx, ".", "./cmd/cdc-relay")
	if err != nil {
		return err
	}
	if err := licenses.Check(entries); err != nil {
		return err
	}
	var buf bytes.Buffer
	path := report
	if notices != "" {
		path = notices
		err = licenses.WriteNotices(&buf, entries)
	} else {
		err = licenses.WriteReport(&buf, entries)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
