package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay"
)

// envName is the environment variable for a flag: CDC_RELAY_ and the flag
// name in upper case with dashes as underscores.
func envName(flagName string) string {
	return "CDC_RELAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse parses args, then fills every flag not given on the command line
// from its environment variable.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usageError{fmt.Sprintf("%s=%q: %v", envName(f.Name), v, e)}
			}
		}
	})
	return err
}

// setUsage gives fs a usage text: the command's description, then each flag
// with its environment variable.
func setUsage(fs *flag.FlagSet, w io.Writer, head string) {
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprint(w, head)
		fmt.Fprintln(w, "\nFlags (each also read from the environment variable shown):")
		fs.VisitAll(func(f *flag.Flag) {
			name, use := flag.UnquoteUsage(f)
			fmt.Fprintf(w, "\n  --%s", f.Name)
			if name != "" {
				fmt.Fprintf(w, " %s", name)
			}
			fmt.Fprintf(w, "   [%s]\n\t%s", envName(f.Name), strings.ReplaceAll(use, "\n", "\n\t"))
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
}

// tableFlags are the names every command shares: the outbox table, the
// relay's tables and the publication.
type tableFlags struct {
	table, statusTable, checkpointTable, publication string
}

func (t *tableFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.table, "table", "public.outbox", "the outbox `schema.table`")
	fs.StringVar(&t.statusTable, "status-table", "public.outbox_delivery", "the status table (`schema.table`) that holds events the fast path could not deliver")
	fs.StringVar(&t.checkpointTable, "checkpoint-table", "public.cdc_relay_checkpoint", "the relay's checkpoint table (`schema.table`)")
	fs.StringVar(&t.publication, "publication", "cdc_relay", "the publication the slot streams")
}

// apply copies the names into cfg.
func (t *tableFlags) apply(cfg *relay.Config) error {
	var err error
	if cfg.Mapping.Schema, cfg.Mapping.Table, err = decoder.ParseTable(t.table); err != nil {
		return usageError{"--table: " + err.Error()}
	}
	if cfg.StatusSchema, cfg.StatusTable, err = decoder.ParseTable(t.statusTable); err != nil {
		return usageError{"--status-table: " + err.Error()}
	}
	if cfg.CheckpointSchema, cfg.CheckpointTable, err = decoder.ParseTable(t.checkpointTable); err != nil {
		return usageError{"--checkpoint-table: " + err.Error()}
	}
	cfg.Publication = t.publication
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
