package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// CompletionCommand is `cdc-relay completion bash|zsh|fish`: print a
// script that completes the commands, the subcommands of failed and config
// and each one's flags in that shell, read from this binary's own flag sets, so that it
// always says what this version takes.
type CompletionCommand struct {
	stdout io.Writer
}

const completionUsage = `Usage: cdc-relay completion bash|zsh|fish

Prints a script that completes cdc-relay's commands, the subcommands of
failed and config, and each one's flags, in that shell; a flag's value
completes as a file name. Load it in your shell's start-up file:

  bash:  source <(cdc-relay completion bash)
         (or save it as /etc/bash_completion.d/cdc-relay)
  zsh:   source <(cdc-relay completion zsh)        # after compinit
  fish:  cdc-relay completion fish > ~/.config/fish/completions/cdc-relay.fish

Print it again after an upgrade: it holds this version's flags.
`

// completionShells are the shells completion writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

// Usage writes completion's help.
func (c *CompletionCommand) Usage(w io.Writer) { fmt.Fprint(w, completionUsage) }

// Run prints the script of the shell args name.
func (c *CompletionCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := parseArgs(fs, args); err != nil { // the shell is an argument: no parseFlags
		return err
	}
	if fs.NArg() != 1 || !slices.Contains(completionShells, fs.Arg(0)) {
		return usageError{fmt.Sprintf("want one shell: bash, zsh or fish, got %q", strings.Join(fs.Args(), " "))}
	}
	shell := fs.Arg(0)
	t := newCompletionTree()
	switch shell {
	case "bash":
		t.writeBash(c.stdout)
	case "zsh":
		fmt.Fprintln(c.stdout, "#compdef cdc-relay")
		fmt.Fprintln(c.stdout, "# zsh completion for cdc-relay: `cdc-relay completion zsh`. It runs the bash completion")
		fmt.Fprintln(c.stdout, "# through zsh's bashcompinit.")
		fmt.Fprintln(c.stdout, "autoload -U +X bashcompinit && bashcompinit")
		t.writeBash(c.stdout)
	case "fish":
		t.writeFish(c.stdout)
	}
	return nil
}

// completionTree is what the scripts complete: the commands (with their
// one-line summary), each command's flags, and the subcommands' of failed
// and config.
type completionTree struct {
	commands  []string
	summaries map[string]string
	flags     map[string][]completionFlag // by command, or "failed SUB", "config SUB"
}

// commandGroup is a command that has subcommands, and its subcommands.
type commandGroup struct {
	name string
	subs []string
}

// commandGroups are the commands that have subcommands.
var commandGroups = []commandGroup{{"failed", failedSubcommands}, {"config", configSubcommands}}

// completionFlag is a flag, the first clause of its usage, and whether it
// is boolean (it takes no value).
type completionFlag struct {
	name, summary string
	boolean       bool
}

// newCompletionTree reads the commands from the top-level usage and each
// command's flags from its flag set.
func newCompletionTree() completionTree {
	t := completionTree{summaries: commandSummaries(), flags: map[string][]completionFlag{}}
	t.commands = commandNames
	for _, name := range t.commands {
		switch cmd := newCommand(name, io.Discard, io.Discard).(type) {
		case *FailedCommand:
			for _, sub := range failedSubcommands {
				t.flags["failed "+sub] = flagsOf(cmd.flags(sub))
			}
		case *ConfigCommand:
			for _, sub := range configSubcommands {
				t.flags["config "+sub] = flagsOf(cmd.flags(sub))
			}
		case interface{ flags() *flag.FlagSet }:
			t.flags[name] = flagsOf(cmd.flags())
		}
	}
	return t
}

// flagsOf lists fs's flags by name, each with its usage's first clause.
func flagsOf(fs *flag.FlagSet) []completionFlag {
	var out []completionFlag
	fs.VisitAll(func(f *flag.Flag) {
		_, usage := unquoteUsage(f)
		out = append(out, completionFlag{name: f.Name, summary: firstClause(usage), boolean: isBoolFlag(f.Value)})
	})
	return out
}

// firstClause is s up to its first ":", ";" or " (", at most 70 bytes.
func firstClause(s string) string {
	if i := strings.IndexAny(s, ":;"); i > 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " ("); i > 0 {
		s = s[:i]
	}
	if len(s) > 70 {
		s = strings.TrimSpace(s[:67]) + "..."
	}
	return s
}

// commandLine is a command's line in the top-level usage.
var commandLine = regexp.MustCompile(`(?m)^  ([a-z-]+)\s+(.+)$`)

// commandSummaries reads each command's summary from the top-level usage.
func commandSummaries() map[string]string {
	var b bytes.Buffer
	usage(&b)
	text, _, _ := strings.Cut(b.String(), "\nEvery flag")
	out := map[string]string{}
	for _, m := range commandLine.FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// flagWords are the flags of cmd ("failed SUB" for a subcommand of
// failed, "config SUB" of config) as words, --name each.
func (t completionTree) flagWords(cmd string) string {
	var words []string
	for _, f := range t.flags[cmd] {
		words = append(words, "--"+f.name)
	}
	return strings.Join(words, " ")
}

// writeBash writes the bash script: a function completing the command
// (word 1), the subcommand of failed or config (word 2), and after that a
// word starting with - as a flag of the command; anything else as a file
// name.
func (t completionTree) writeBash(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for cdc-relay: `+"`cdc-relay completion bash`"+`
_cdc_relay() {
    local cur="${COMP_WORDS[COMP_CWORD]}" cmd="${COMP_WORDS[1]}" flags=""
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W %[1]q -- "$cur"))
        return
    fi
    case "$cmd" in
    help)
        [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W %[1]q -- "$cur"))
        return ;;
    completion)
        [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W %[2]q -- "$cur"))
        return ;;
`, strings.Join(t.commands, " "), strings.Join(completionShells, " "))
	for _, g := range commandGroups {
		fmt.Fprintf(w, `    %s)
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=($(compgen -W %q -- "$cur"))
            return
        fi
        case "${COMP_WORDS[2]}" in
`, g.name, strings.Join(g.subs, " "))
		for _, sub := range g.subs {
			fmt.Fprintf(w, "        %s) flags=%q ;;\n", sub, t.flagWords(g.name+" "+sub))
		}
		fmt.Fprintln(w, "        esac ;;")
	}
	for _, name := range t.commands {
		if _, ok := t.flags[name]; ok {
			fmt.Fprintf(w, "    %s) flags=%q ;;\n", name, t.flagWords(name))
		}
	}
	fmt.Fprint(w, `    esac
    case "$cur" in
    -*) COMPREPLY=($(compgen -W "$flags" -- "$cur")) ;;
    esac
}
complete -o default -F _cdc_relay cdc-relay
`)
}

// writeFish writes the fish script: the commands with their summaries,
// the subcommands of failed and config, and each one's flags with the
// first clause of their usage.
func (t completionTree) writeFish(w io.Writer) {
	fmt.Fprintln(w, "# fish completion for cdc-relay: `cdc-relay completion fish`")
	fmt.Fprintln(w, "complete -c cdc-relay -f")
	for _, name := range t.commands {
		fmt.Fprintf(w, "complete -c cdc-relay -n __fish_use_subcommand -a %s -d %s\n", name, fishQuote(t.summaries[name]))
	}
	fmt.Fprintf(w, "complete -c cdc-relay -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(strings.Join(t.commands, " ")))
	fmt.Fprintf(w, "complete -c cdc-relay -n '__fish_seen_subcommand_from completion' -a %s\n", fishQuote(strings.Join(completionShells, " ")))
	for _, g := range commandGroups {
		subs := strings.Join(g.subs, " ")
		fmt.Fprintf(w, "complete -c cdc-relay -n '__fish_seen_subcommand_from %s; and not __fish_seen_subcommand_from %s' -a %s\n", g.name, subs, fishQuote(subs))
	}
	for _, name := range t.commands {
		for _, f := range t.flags[name] {
			fmt.Fprintf(w, "complete -c cdc-relay -n '__fish_seen_subcommand_from %s' -l %s%s -d %s\n", name, f.name, f.fishValue(), fishQuote(f.summary))
		}
	}
	for _, g := range commandGroups {
		for _, sub := range g.subs {
			for _, f := range t.flags[g.name+" "+sub] {
				fmt.Fprintf(w, "complete -c cdc-relay -n '__fish_seen_subcommand_from %s; and __fish_seen_subcommand_from %s' -l %s%s -d %s\n",
					g.name, sub, f.name, f.fishValue(), fishQuote(f.summary))
			}
		}
	}
}

// fishValue is what fish completes after the flag: a file name unless it
// is boolean.
func (f completionFlag) fishValue() string {
	if f.boolean {
		return ""
	}
	return " -r -F"
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
