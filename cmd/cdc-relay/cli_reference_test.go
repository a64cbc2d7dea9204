package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/goldentest"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// cliReferencePath is the command-line reference, in the repository.
const cliReferencePath = "docs/reference/cli.md"

// cliReferenceRegen is the command that rewrites it.
const cliReferenceRegen = "go test ./cmd/cdc-relay/ -run TestCLIReference -update"

// cliEntry is a command, or a subcommand of failed or config, as its
// --help shows it: the usage before the flags, and the flags by section.
type cliEntry struct {
	// name is the command as typed after cdc-relay: "run", "failed list",
	// "config from-debezium".
	name string
	// head is its usage, before the flags.
	head string
	// accepted are the flags it parses; listed those its usage lists
	// (the same but for recover, backfill and audit, which accept every flag of
	// run and list those they use). Empty for a command without flags.
	accepted, listed *flag.FlagSet
	// sections order listed in its usage.
	sections []flagSection
	// usage is the command's own Usage, which printUsage of head, listed
	// and sections must write byte for byte.
	usage func(io.Writer)
	// operands is what the command takes besides flags: none, a
	// subcommand (failed, config), or words of its own (failed's ids,
	// from-debezium's file, completion's shell, help's command).
	operands operandKind
}

// operandKind is what a command takes besides its flags.
type operandKind int

const (
	noOperands   operandKind = iota // run, migrate, …: an argument is a usage error
	subcommand                      // failed, config: a subcommand, then its flags
	anyOperands                     // failed's ids, from-debezium's file
	shellOperand                    // completion: bash, zsh or fish
	helpOperand                     // help: a command
)

// cliEntries are every command of commandNames, in their order, the
// subcommands of failed and config each after its command. A command missing from the switch
// fails the test, naming it: add its case, with its usage head and
// sections as its Usage passes them to printUsage.
func cliEntries(t testing.TB) []cliEntry {
	t.Helper()
	none := func(name string) *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }
	var out []cliEntry
	for _, name := range commandNames {
		if name == "help" {
			out = append(out, cliEntry{name: name, head: topUsage(), accepted: none(name), listed: none(name), usage: usage, operands: helpOperand})
			continue
		}
		cmd := newCommand(name, io.Discard, io.Discard)
		e := cliEntry{name: name, usage: cmd.Usage}
		switch c := cmd.(type) {
		case *MigrateCommand:
			e.head, e.sections = migrateUsage, migrateSections
			e.accepted = c.flags()
		case *RunCommand:
			e.head, e.sections = runUsage, runSections
			e.accepted = c.flags()
		case *StatusCommand:
			e.head, e.sections = statusUsage, statusSections
			e.accepted = c.flags()
		case *PauseCommand:
			e.head, e.sections = pauseUsage, c.sections()
			if c.resume {
				e.head = resumeUsage
			}
			e.accepted = c.flags()
		case *RecoverCommand:
			e.head, e.sections = recoverUsage, recoverSections
			e.accepted = c.flags()
			e.listed = listedOnly(e.accepted, recoverSections)
		case *BackfillCommand:
			e.head, e.sections = backfillUsage, backfillSections
			e.accepted = c.flags()
			e.listed = listedOnly(e.accepted, backfillSections)
		case *AuditCommand:
			e.head, e.sections = auditUsage, auditSections
			e.accepted = c.flags()
			e.listed = listedOnly(e.accepted, auditSections)
		case *CheckConfigCommand:
			e.head, e.sections = checkConfigUsage, checkConfigSections
			e.accepted = c.flags()
		case *DemoCommand:
			e.head = demoUsage
			e.accepted = c.flags()
		case *VersionCommand:
			e.head = versionUsage
			e.accepted = none(name)
		case *CompletionCommand:
			e.head = completionUsage
			e.accepted = none(name)
			e.operands = shellOperand
		case *FailedCommand:
			e.head = failedUsage
			e.accepted, e.listed = none(name), none(name)
			e.operands = subcommand
			out = append(out, e)
			for _, sub := range failedSubcommands {
				c := &FailedCommand{sub: sub}
				fs := c.flags(sub)
				kind := anyOperands
				if sub == "list" {
					kind = noOperands
				}
				out = append(out, cliEntry{name: "failed " + sub, head: failedTable[sub].head, accepted: fs, listed: fs,
					sections: failedSections(sub), usage: c.Usage, operands: kind})
			}
			continue
		case *ConfigCommand:
			e.head = configCommandUsage
			e.accepted, e.listed = none(name), none(name)
			e.operands = subcommand
			out = append(out, e)
			for _, sub := range configSubcommands {
				c := &ConfigCommand{sub: sub}
				fs := c.flags(sub)
				out = append(out, cliEntry{name: "config " + sub, head: configTable[sub].head, accepted: fs, listed: fs,
					sections: configTable[sub].sections, usage: c.Usage, operands: anyOperands})
			}
			continue
		default:
			t.Fatalf("cdc-relay %s (%T) is not in the command-line reference: add its case to cliEntries in %s", name, cmd, "cmd/cdc-relay/cli_reference_test.go")
		}
		if e.listed == nil {
			e.listed = e.accepted
		}
		out = append(out, e)
	}
	return out
}

// topUsage is the top-level usage, as `cdc-relay help` prints it.
func topUsage() string {
	var b strings.Builder
	usage(&b)
	return b.String()
}

// cliEntryByName returns the entry of name ("run", "failed list"), or
// false.
func cliEntryByName(entries []cliEntry, name string) (cliEntry, bool) {
	for _, e := range entries {
		if e.name == name {
			return e, true
		}
	}
	return cliEntry{}, false
}

// TestCLIReferenceEntriesAreTheHelp: each entry's head, flags and
// sections make, through printUsage, exactly what the command's --help
// prints, so that the reference says what the binary says.
func TestCLIReferenceEntriesAreTheHelp(t *testing.T) {
	for _, e := range cliEntries(t) {
		var have, want bytes.Buffer
		e.usage(&have)
		printUsage(&want, e.listed, e.head, e.sections)
		if have.String() != want.String() {
			t.Errorf("cdc-relay %s: its --help is not what its entry in cliEntries makes: make the entry pass its Usage's head, flags and sections\n%s",
				e.name, helpDifference(have.String(), want.String()))
		}
	}
}

// helpDifference names the first line where have and want differ.
func helpDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := range max(len(h), len(w)) {
		if i >= len(h) || i >= len(w) || h[i] != w[i] {
			at := func(lines []string) string {
				if i < len(lines) {
					return lines[i]
				}
				return "(end)"
			}
			return fmt.Sprintf("line %d: --help has %q, the entry makes %q", i+1, at(h), at(w))
		}
	}
	return ""
}

// TestCLIReference fails when docs/reference/cli.md is not what the
// commands' flag sets and usage make of it; -update rewrites it.
func TestCLIReference(t *testing.T) {
	goldentest.Check(t, "../..", cliReferencePath, []byte(cliReference(t)), cliReferenceRegen)
}

// otherEnvDocs says what each variable of otherEnv is for.
var otherEnvDocs = map[string]string{
	kafkaSASLPasswordEnv: "the password of `--kafka-sasl-user` (there is no flag for it: a command line shows in `ps`); or `--kafka-sasl-password-file`",
	pgtemp.VersionEnv:    "`demo` only: the PostgreSQL its throwaway cluster runs, a major version (13 to 18, fetched once) or the path of a bin directory holding initdb, pg_ctl and postgres; unset, PG_BINDIR, else the system's",
	pgtemp.CacheEnv:      "`demo` only: where the PostgreSQL versions " + pgtemp.VersionEnv + " fetches are kept",
}

// cliReference generates docs/reference/cli.md.
func cliReference(t testing.TB) string {
	t.Helper()
	entries := cliEntries(t)
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- generated by `%s`; do not edit -->\n\n", cliReferenceRegen)
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("Every command of `cdc-relay` and every flag it takes, as the binary's own help says them " +
		"(`cdc-relay help <command>`, or `cdc-relay <command> -h`), with the flags grouped as the help groups them. " +
		"Every flag can also be set by the environment variable beside it: `CDC_RELAY_` and the flag's name in upper case, " +
		"dashes as underscores (`--kafka-brokers` is `CDC_RELAY_KAFKA_BROKERS`); the command line wins over the environment, " +
		"and a flag marked *command line only* is never read from the environment. A true/false flag takes its value after `=` " +
		"(`--kafka-create-topics=false`); a duration takes a unit (`500ms`, `30s`, `5m`, `7d`). " +
		"With `--config`, a flag or variable overrides the config file's setting ([config.md](config.md)); " +
		"the metrics `run` serves are in [metrics.md](metrics.md).\n\n")

	summaries := commandSummaries()
	b.WriteString("| Command | What it does |\n|---|---|\n")
	for _, name := range commandNames {
		fmt.Fprintf(&b, "| [`cdc-relay %s`](#%s) | %s |\n", name, goldentest.Anchor("cdc-relay "+name), goldentest.Cell(summaries[name]))
	}

	for _, e := range entries {
		level := "##"
		if strings.Contains(e.name, " ") { // a subcommand: failed list, config from-debezium
			level = "###"
		}
		fmt.Fprintf(&b, "\n%s cdc-relay %s\n\n", level, e.name)
		b.WriteString(goldentest.Fence("text", e.head))
		writeFlagTables(&b, e, level+"#")
	}

	b.WriteString("\n## Other environment variables\n\n")
	b.WriteString("Variables read other than as a flag's. A `CDC_RELAY_` variable that no command reads is warned of " +
		"when a command starts, naming the one it may misspell, unless it begins with `CDC_RELAY_TEST_` (the repository's tests' own).\n\n")
	b.WriteString("| Variable | What it is |\n|---|---|\n")
	names := slices.Clone(otherEnv)
	slices.Sort(names)
	for _, name := range names {
		doc, ok := otherEnvDocs[name]
		if !ok {
			t.Fatalf("%s (otherEnv) has no description: add it to otherEnvDocs in cmd/cdc-relay/cli_reference_test.go", name)
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, doc)
	}
	for name := range otherEnvDocs {
		if !slices.Contains(otherEnv, name) {
			t.Fatalf("otherEnvDocs describes %s, which is not in otherEnv: remove it", name)
		}
	}
	return b.String()
}

// writeFlagTables writes e's flags: a table per section of its usage, in
// its order, then the flags of no section, as printUsage lists them, and
// the flags accepted but not listed. Headings are at level (such as
// "###").
func writeFlagTables(b *strings.Builder, e cliEntry, level string) {
	var all []*flag.Flag
	e.listed.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) == 0 {
		if e.operands != subcommand {
			b.WriteString("\nNo flags.\n")
		}
		return
	}
	shown := map[string]bool{}
	for _, s := range e.sections {
		var fs []*flag.Flag
		for _, name := range s.names {
			if f := e.listed.Lookup(name); f != nil && !shown[name] {
				fs = append(fs, f)
				shown[name] = true
			}
		}
		if len(fs) > 0 {
			fmt.Fprintf(b, "\n%s %s\n\n", level, s.title)
			writeFlagTable(b, fs)
		}
	}
	var rest []*flag.Flag
	for _, f := range all {
		if !shown[f.Name] {
			rest = append(rest, f)
		}
	}
	if len(rest) > 0 {
		title := "Flags"
		if len(e.sections) > 0 {
			title = "Other flags"
		}
		fmt.Fprintf(b, "\n%s %s\n\n", level, title)
		writeFlagTable(b, rest)
	}
	var unlisted []string
	e.accepted.VisitAll(func(f *flag.Flag) {
		if e.listed.Lookup(f.Name) == nil {
			unlisted = append(unlisted, "`--"+f.Name+"`")
		}
	})
	if len(unlisted) > 0 {
		fmt.Fprintf(b, "\n%s Accepted, not listed by its help\n\n", level)
		fmt.Fprintf(b, "`cdc-relay %s` also accepts these flags of `run`, on the command line or from their environment variables, "+
			"which its help does not list: %s.\n", e.name, strings.Join(unlisted, ", "))
	}
}

// writeFlagTable writes a table of flags: the flag with its placeholder,
// its default, its environment variable and its usage.
func writeFlagTable(b *strings.Builder, flags []*flag.Flag) {
	b.WriteString("| Flag | Default | Environment variable | Description |\n|---|---|---|---|\n")
	for _, f := range flags {
		_, usage := unquoteUsage(f)
		env := goldentest.Code(envName(f.Name))
		if _, ok := f.Value.(commandLineOnly); ok {
			env = "*command line only*"
		}
		def := ""
		if f.DefValue != "" {
			def = goldentest.Code(f.DefValue)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", goldentest.Code(flagSynopsis(f)), def, env, goldentest.Cell(usage))
	}
}
