package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/suggest"
)

// The command lines of the Markdown docs: TestDocCommandLines reads every
// *.md file of the repository and checks each cdc-relay command line of
// its shell code blocks against the commands' flag sets (cliEntries),
// running nothing: the command exists (and the subcommand of failed or
// config), each flag is one of the command's, a flag that takes a value
// has one, a true/false flag takes none after a space, a command that
// takes no arguments gets none, and a CDC_RELAY_ variable set before the
// command is one that the command reads.
//
// A code block is a shell's when its fence names no language, or sh,
// bash, shell, console, zsh or fish (the languages of docShellLanguages);
// text, yaml and the others are output or files, never read here. In a
// block with a "$ " prompt, only the prompts' lines are commands, the
// others their output; in a block without, every line is. A line ending
// with \ continues on the next. A line is read as a shell would split it
// into words (quotes, backslashes, comments, pipes, &&, ;, $( ), <( ),
// redirections), and a simple command is cdc-relay's when its first word,
// after variable assignments (and sudo, env, exec or time), is cdc-relay
// or a path ending in /cdc-relay. <placeholder> words are words. A line
// that names cdc-relay and cannot be split is a failure, not skipped.

// docShellLanguages are the fence languages whose blocks are shell
// sessions or scripts ("" is a fence that names none).
var docShellLanguages = []string{"", "sh", "bash", "shell", "console", "zsh", "fish", "sh-session", "shell-session", "shellsession"}

// docSkipDirs are the directories the walk does not enter, wherever they
// are: git's, test data, and JavaScript's modules (none yet).
var docSkipDirs = []string{".git", "testdata", "node_modules"}

// docSkipRootDirs are the repository root's directories the walk does not
// enter: the build's output (make build, make release), which git ignores.
var docSkipRootDirs = []string{"bin", "dist"}

// TestDocCommandLines fails for each cdc-relay command line of the
// repository's Markdown files that the binary would refuse, with its
// file and line.
func TestDocCommandLines(t *testing.T) {
	const root = "../.."
	entries := cliEntries(t)
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, rel := range files {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		n, problems := checkMarkdown(entries, string(text))
		checked += n
		for _, p := range problems {
			t.Errorf("%s:%d: %s", rel, p.line, p.msg)
		}
	}
	if checked == 0 {
		t.Fatalf("no cdc-relay command line found in the %d Markdown files under %s: is the walk's root the repository's?", len(files), root)
	}
	t.Logf("checked %d cdc-relay command lines in %d Markdown files", checked, len(files))
}

// markdownFiles returns the *.md files under root, as slash-separated
// paths relative to it, sorted; docSkipDirs (anywhere), docSkipRootDirs
// (at the root) and hidden directories but .github are not entered.
func markdownFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		switch {
		case d.IsDir() && rel == ".":
		case d.IsDir() && (slices.Contains(docSkipDirs, name) || !strings.Contains(rel, "/") && slices.Contains(docSkipRootDirs, name) ||
			strings.HasPrefix(name, ".") && name != ".github"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(name, ".md"):
			files = append(files, rel)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// docProblem is what is wrong with a command line of a Markdown file, at
// its first line.
type docProblem struct {
	line int
	msg  string
}

// fenceLine is the opening or closing line of a fenced code block: up to
// three spaces (more in a list item), three or more backticks or tildes,
// and the info string.
var fenceLine = regexp.MustCompile("^\\s*(`{3,}|~{3,})\\s*([^`\\s]*)")

// checkMarkdown checks the cdc-relay command lines of text's shell code
// blocks, and returns how many it checked and the problems.
func checkMarkdown(entries []cliEntry, text string) (checked int, problems []docProblem) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceLine.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, lang := m[1], strings.ToLower(m[2])
		start := i + 1
		end := start
		for end < len(lines) {
			if c := fenceLine.FindStringSubmatch(lines[end]); c != nil && c[1][0] == fence[0] && len(c[1]) >= len(fence) && c[2] == "" {
				break
			}
			end++
		}
		if slices.Contains(docShellLanguages, lang) {
			n, ps := checkBlock(entries, lines[start:end], start+1)
			checked += n
			problems = append(problems, ps...)
		}
		i = end
	}
	return checked, problems
}

// promptLine is a shell prompt's line: "$ command".
var promptLine = regexp.MustCompile(`^\s*\$ `)

// mentionsCdcRelay reports whether a line may hold a cdc-relay command:
// the word cdc-relay (or a path ending in it), before a space, an
// operator or the end.
var mentionsCdcRelay = regexp.MustCompile("(^|[\\s/;|&(`])cdc-relay($|[\\s;|&)`])")

// checkBlock checks the command lines of a shell code block whose first
// line is number first of its file; it returns how many it checked and
// the problems.
func checkBlock(entries []cliEntry, lines []string, first int) (checked int, problems []docProblem) {
	prompts := slices.ContainsFunc(lines, promptLine.MatchString)
	for i := 0; i < len(lines); i++ {
		line, at := lines[i], first+i
		if prompts {
			if !promptLine.MatchString(line) {
				continue // output
			}
			line = promptLine.ReplaceAllString(line, "")
		}
		// A line ending in \ goes on on the next (after "> ", the
		// continuation prompt, in a session).
		for strings.HasSuffix(strings.TrimRight(line, " \t"), `\`) {
			line = strings.TrimSuffix(strings.TrimRight(line, " \t"), `\`)
			if i+1 >= len(lines) {
				problems = append(problems, docProblem{at, "the line ends with \\ but the block ends: finish the command"})
				break
			}
			i++
			next := lines[i]
			if prompts {
				next = strings.TrimPrefix(strings.TrimLeft(next, " \t"), "> ")
			}
			line += " " + next
		}
		if !mentionsCdcRelay.MatchString(line) {
			continue
		}
		n, err := checkCommandLine(entries, line)
		checked += n
		if err != nil {
			msg := fmt.Sprintf("%s\n\t%s", err, strings.TrimSpace(line))
			if !prompts && errors.As(err, new(maybeOutput)) {
				msg += "\n\t(if this line is a command's output, not a command, put it in a ```text block, or after a `$ ` line)"
			}
			problems = append(problems, docProblem{at, msg})
		}
	}
	return checked, problems
}

// maybeOutput is a problem of a line that may be a command's output
// rather than a command: a line that does not split into words, or whose
// command is not one.
type maybeOutput struct{ error }

func (e maybeOutput) Unwrap() error { return e.error }

// checkCommandLine splits line into simple commands as a shell would, and
// checks each that runs cdc-relay; it returns how many it checked and the
// first problem.
func checkCommandLine(entries []cliEntry, line string) (int, error) {
	commands, err := shellCommands(line)
	if err != nil {
		return 1, maybeOutput{fmt.Errorf("cannot read the command line: %w", err)}
	}
	checked := 0
	for _, words := range commands {
		var env []string
		for len(words) > 0 {
			if shellAssignment.MatchString(words[0]) {
				env = append(env, words[0])
			} else if !slices.Contains([]string{"sudo", "env", "exec", "time"}, words[0]) {
				break
			}
			words = words[1:]
		}
		if len(words) == 0 || path.Base(words[0]) != "cdc-relay" {
			continue
		}
		checked++
		if err := checkInvocation(entries, env, words[1:]); err != nil {
			return checked, err
		}
	}
	return checked, nil
}

// shellAssignment is a variable assignment before a command: NAME=value.
var shellAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// placeholderWord is a <placeholder>: a word of the docs that stands for
// a value, never a redirection.
var placeholderWord = regexp.MustCompile(`^<[A-Za-z][^<>\s]*>`)

// isPlaceholder reports whether a word is a <placeholder>.
func isPlaceholder(w string) bool { return placeholderWord.MatchString(w) }

// shellCommands splits line into its simple commands, each a list of
// words, as a shell would: quotes and backslashes make one word, # starts
// a comment, |, ||, &&, &, ;, ( and ) separate commands, a command
// substitution ($( ) or backquotes) or a process substitution (<( )) is a
// word whose commands are returned too, after the line's, and
// redirections (>, >>, <, 2>&1, &>) are dropped with their target. It
// expands nothing.
func shellCommands(line string) ([][]string, error) {
	var (
		commands [][]string
		nested   [][]string // the substitutions' commands
		words    []string
		word     strings.Builder
		inWord   bool
		target   bool // the next word is a redirection's target
	)
	endWord := func() {
		if inWord {
			if target {
				target = false
			} else {
				words = append(words, word.String())
			}
		}
		word.Reset()
		inWord = false
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			commands = append(commands, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			i = len(line)
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a ' is not closed")
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) && strings.IndexByte("$`\"\\", line[j+1]) >= 0 {
					j++
				}
				word.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, errors.New(`a " is not closed`)
			}
			inWord, i = true, j
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New(`a \ ends the line`)
			}
			word.WriteByte(line[i+1])
			inWord, i = true, i+1
		case c == '<' && placeholderWord.MatchString(line[i:]):
			m := placeholderWord.FindString(line[i:])
			word.WriteString(m)
			inWord, i = true, i+len(m)-1
		case c == '<' && strings.HasPrefix(line[i:], "<<"):
			return nil, errors.New("a here-document (<<) is more than this check reads: show the command without it")
		case c == '<' && strings.HasPrefix(line[i:], "<("), c == '$' && strings.HasPrefix(line[i:], "$("), c == '`':
			// A command substitution, or a process's: a word to this
			// command, and commands of their own, read too.
			inner, n, err := substitution(line[i:])
			if err != nil {
				return nil, err
			}
			cs, err := shellCommands(inner)
			if err != nil {
				return nil, err
			}
			nested = append(nested, cs...)
			word.WriteString(line[i : i+n])
			inWord, i = true, i+n-1
		case c == '>' || c == '<' || c == '&' && strings.HasPrefix(line[i:], "&>"):
			// A redirection: a file descriptor's number before it is
			// part of it, and so is &N after it; the next word is its
			// target.
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset()
				inWord = false
			}
			endWord()
			for i+1 < len(line) && (line[i+1] == '>' || line[i+1] == '&') {
				i++
			}
			if line[i] == '&' {
				for i+1 < len(line) && (line[i+1] >= '0' && line[i+1] <= '9' || line[i+1] == '-') {
					i++
				}
				continue
			}
			target = true
		case strings.IndexByte("|&;()", c) >= 0:
			endCommand()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if target && !inWord {
		return nil, errors.New("a redirection has no target")
	}
	endCommand()
	return append(commands, nested...), nil
}

// substitution reads the substitution s starts with, "$(…)", "<(…)" or
// "`…`", and returns the command line inside it and its length in s.
// Parentheses nest, and quotes inside it are skipped whole.
func substitution(s string) (inner string, n int, err error) {
	if s[0] == '`' {
		j := strings.IndexByte(s[1:], '`')
		if j < 0 {
			return "", 0, errors.New("a ` is not closed")
		}
		return s[1 : 1+j], j + 2, nil
	}
	depth := 0
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], s[i])
			if j < 0 {
				return "", 0, fmt.Errorf("a %c is not closed", s[i])
			}
			i += j + 1
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return s[2:i], i + 1, nil
			}
		}
	}
	return "", 0, fmt.Errorf("a %s is not closed", s[:2])
}

// checkInvocation checks a cdc-relay command line, args being the words
// after cdc-relay and env the variables assigned before it (NAME=value
// each), against entries.
func checkInvocation(entries []cliEntry, env, args []string) error {
	if len(args) == 0 {
		return errors.New("cdc-relay without a command prints its usage and exits 2: name a command")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-v", "-version", "--version":
		name = "version"
	case "-h", "-help", "--help":
		name = "help"
	}
	switch {
	case isPlaceholder(name):
		return fmt.Errorf("the command is a placeholder, %s: this check cannot tell which command's flags to check; show a command", name)
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("flag %s before the command: flags go after it, as in 'cdc-relay run %s'", name, name)
	case name == "failed":
		if len(rest) == 0 {
			return errors.New("cdc-relay failed needs a subcommand: list, show, retry, skip or purge")
		}
		sub := rest[0]
		switch {
		case sub == "-h" || sub == "-help" || sub == "--help":
			return nil
		case sub == "help":
			if len(rest) > 1 && !isPlaceholder(rest[1]) {
				return checkSubcommand(rest[1])
			}
			return nil
		case isPlaceholder(sub):
			return fmt.Errorf("failed's subcommand is a placeholder, %s: this check cannot tell which subcommand's flags to check; show a subcommand", sub)
		}
		if err := checkSubcommand(sub); err != nil {
			return fmt.Errorf("cdc-relay failed: %w", err)
		}
		name, rest = "failed "+sub, rest[1:]
	case name == "config":
		if len(rest) == 0 {
			return errors.New("cdc-relay config needs a subcommand: " + strings.Join(configSubcommands, ", "))
		}
		sub := rest[0]
		switch {
		case sub == "-h" || sub == "-help" || sub == "--help":
			return nil
		case sub == "help":
			if len(rest) > 1 && !isPlaceholder(rest[1]) {
				return checkConfigSubcommand(rest[1])
			}
			return nil
		case isPlaceholder(sub):
			return fmt.Errorf("config's subcommand is a placeholder, %s: this check cannot tell which subcommand's flags to check; show a subcommand", sub)
		}
		if err := checkConfigSubcommand(sub); err != nil {
			return fmt.Errorf("cdc-relay config: %w", err)
		}
		name, rest = "config "+sub, rest[1:]
	}
	e, ok := cliEntryByName(entries, name)
	if cmd, isMessage := strings.CutSuffix(name, ":"); !ok && isMessage && slices.Contains(commandNames, cmd) {
		return maybeOutput{fmt.Errorf("%q is how cdc-relay %s starts an error message, not a command line", "cdc-relay "+name, cmd)}
	}
	if !ok {
		msg := fmt.Sprintf("unknown command %q", name)
		if s := suggest.Name(name, commandNames); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return maybeOutput{errors.New(msg + ": the commands are " + strings.Join(commandNames, ", "))}
	}
	if err := checkEnvAssignments(e, env); err != nil {
		return err
	}
	return checkArgs(e, rest)
}

// checkEnvAssignments checks that each CDC_RELAY_ variable of env
// (NAME=value each, as assigned before the command) is read by e's
// command: a flag's, not one of the command line only, or one of
// otherEnv. The tests' own (CDC_RELAY_TEST_) are not checked.
func checkEnvAssignments(e cliEntry, env []string) error {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || strings.HasPrefix(name, testEnvPrefix) || slices.Contains(otherEnv, name) {
			continue
		}
		var match *flagMatch
		var known []string
		e.accepted.VisitAll(func(f *flag.Flag) {
			known = append(known, envName(f.Name))
			if envName(f.Name) == name {
				_, only := f.Value.(commandLineOnly)
				match = &flagMatch{name: f.Name, commandLineOnly: only}
			}
		})
		switch {
		case match == nil:
			msg := fmt.Sprintf("%s is read by no flag of cdc-relay %s", name, e.name)
			if s := nearestEnv(name, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			return errors.New(msg)
		case match.commandLineOnly:
			return fmt.Errorf("%s: --%s of cdc-relay %s is read from the command line only: give it there", name, match.name, e.name)
		}
	}
	return nil
}

// flagMatch is the flag a variable names.
type flagMatch struct {
	name            string
	commandLineOnly bool
}

// checkArgs checks the words after the command (or its subcommand)
// against e's flags and operands, as parseFlags and splitArgs read them.
func checkArgs(e cliEntry, args []string) error {
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		name, ok := argFlagName(a)
		if !ok {
			operands = append(operands, a)
			continue
		}
		if name == "h" || name == "help" {
			continue
		}
		f := e.accepted.Lookup(name)
		if f == nil {
			msg := fmt.Sprintf("--%s is not a flag of cdc-relay %s", name, e.name)
			if s := suggestFlag(e.accepted, name); s != "" {
				msg += fmt.Sprintf(" (did you mean --%s?)", s)
			}
			return errors.New(msg)
		}
		_, _, hasValue := strings.Cut(a, "=")
		switch {
		case hasValue:
		case isBoolFlag(f.Value):
			if i+1 < len(args) && (args[i+1] == "true" || args[i+1] == "false") {
				return fmt.Errorf("--%s %s: a true/false flag takes its value after '=': --%s=%s", name, args[i+1], name, args[i+1])
			}
		case i+1 >= len(args):
			return fmt.Errorf("--%s needs a value", name)
		default:
			i++ // its value
		}
	}
	switch e.operands {
	case noOperands:
		if len(operands) > 0 {
			return fmt.Errorf("unexpected argument %q: cdc-relay %s takes flags only", operands[0], e.name)
		}
	case shellOperand:
		if len(operands) != 1 || !slices.Contains(completionShells, operands[0]) && !isPlaceholder(operands[0]) {
			return fmt.Errorf("cdc-relay %s wants one shell: %s, got %q", e.name, strings.Join(completionShells, ", "), strings.Join(operands, " "))
		}
	case helpOperand:
		switch {
		case len(operands) > 1:
			return fmt.Errorf("cdc-relay help wants one command, got %q", strings.Join(operands, " "))
		case len(operands) == 1 && !isPlaceholder(operands[0]) && !slices.Contains(commandNames, operands[0]):
			return fmt.Errorf("cdc-relay help %s: unknown command %q", operands[0], operands[0])
		}
	}
	return nil
}

// TestShellCommands: a line splits into the words a shell would give each
// simple command.
func TestShellCommands(t *testing.T) {
	tests := []struct {
		line string
		want string // commands separated by " ; ", words by "|"
		err  string
	}{
		{line: `cdc-relay run --slot a`, want: `cdc-relay|run|--slot|a`},
		{line: `X="a b" ./bin/cdc-relay migrate # the tables`, want: `X=a b|./bin/cdc-relay|migrate`},
		{line: `cdc-relay backfill --where "created_at > now() - interval '1 hour'" --dry-run`, want: `cdc-relay|backfill|--where|created_at > now() - interval '1 hour'|--dry-run`},
		{line: `cdc-relay migrate --print-grants relay | psql "$ADMIN_URL"`, want: `cdc-relay|migrate|--print-grants|relay ; psql|$ADMIN_URL`},
		{line: `tar -xzf a.tgz && ./cdc-relay --version`, want: `tar|-xzf|a.tgz ; ./cdc-relay|--version`},
		{line: `source <(cdc-relay completion bash)`, want: `source|<(cdc-relay completion bash) ; cdc-relay|completion|bash`},
		{line: `cdc-relay completion fish > ~/.config/fish/completions/cdc-relay.fish`, want: `cdc-relay|completion|fish`},
		{line: `cdc-relay status --json 2>&1 >/dev/null`, want: `cdc-relay|status|--json`},
		{line: `cdc-relay failed show <id> --json`, want: `cdc-relay|failed|show|<id>|--json`},
		{line: `cdc-relay run --postgres-url $(cat url) --slot a`, want: `cdc-relay|run|--postgres-url|$(cat url)|--slot|a ; cat|url`},
		{line: `cdc-relay run --slot 'a`, err: `' is not closed`},
		{line: `cdc-relay run --slot "a`, err: `" is not closed`},
		{line: `cdc-relay run < `, err: "no target"},
	}
	for _, tt := range tests {
		commands, err := shellCommands(tt.line)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: got %v, want an error with %q", tt.line, err, tt.err)
			}
			continue
		}
		var got []string
		for _, c := range commands {
			got = append(got, strings.Join(c, "|"))
		}
		if err != nil || strings.Join(got, " ; ") != tt.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", tt.line, strings.Join(got, " ; "), err, tt.want)
		}
	}
}

// TestCheckCommandLine: what the docs' check says of a command line.
func TestCheckCommandLine(t *testing.T) {
	entries := cliEntries(t)
	tests := []struct {
		line string
		err  string // "" for none
	}{
		{line: `cdc-relay run --kafka-brokers k:9092 --slot s`},
		{line: `./bin/cdc-relay run --kafka-create-topics=false`},
		{line: `CDC_RELAY_POSTGRES_URL="$ADMIN_URL" ./bin/cdc-relay migrate`},
		{line: `cdc-relay --version`},
		{line: `cdc-relay help run`},
		{line: `cdc-relay run -h`},
		{line: `cdc-relay failed retry 14 --topic outbox.event.order`},
		{line: `cdc-relay failed purge --dead --older-than 30d`},
		{line: `cdc-relay failed help retry`},
		{line: `cdc-relay config from-debezium --slot outbox_relay connector.json > relay.yaml`},
		{line: `cdc-relay config help from-debezium`},
		{line: `cdc-relay completion <shell>`},
		{line: `cdc-relay recover --delivery exactly-once --dry-run`}, // one of run's, accepted
		{line: `echo cdc-relay run --nope`},                           // not cdc-relay's command
		{line: `cdc-relay`, err: "name a command"},
		{line: `cdc-relay runn`, err: `unknown command "runn" (did you mean run?)`},
		{line: `cdc-relay run: Kafka refuses the relay's connection`, err: "cannot read"},
		{line: `cdc-relay run: Kafka refuses the connection`, err: "starts an error message"},
		{line: `cdc-relay --slot s run`, err: "flag --slot before the command"},
		{line: `cdc-relay <command> -h`, err: "the command is a placeholder"},
		{line: `cdc-relay run --kafka-broker k:9092`, err: "--kafka-broker is not a flag of cdc-relay run (did you mean --kafka-brokers?)"},
		{line: `cdc-relay run --slot`, err: "--slot needs a value"},
		{line: `cdc-relay run --kafka-create-topics false`, err: "takes its value after '='"},
		{line: `cdc-relay status extra`, err: `unexpected argument "extra"`},
		{line: `cdc-relay failed`, err: "needs a subcommand"},
		{line: `cdc-relay failed lst`, err: `unknown subcommand "lst" (did you mean list?)`},
		{line: `cdc-relay failed list --all`, err: "--all is not a flag of cdc-relay failed list"},
		{line: `cdc-relay config`, err: "needs a subcommand"},
		{line: `cdc-relay config from-debezum x.json`, err: `unknown subcommand "from-debezum" (did you mean from-debezium?)`},
		{line: `cdc-relay config from-debezium --slott s x.json`, err: "--slott is not a flag of cdc-relay config from-debezium (did you mean --slot?)"},
		{line: `CDC_RELAY_SLOT=s cdc-relay config from-debezium x.json`, err: "read from the command line only"},
		{line: `cdc-relay completion tcsh`, err: "wants one shell"},
		{line: `cdc-relay help runn`, err: `unknown command "runn"`},
		{line: `CDC_RELAY_SLOTT=a cdc-relay run`, err: "CDC_RELAY_SLOTT is read by no flag of cdc-relay run (did you mean CDC_RELAY_SLOT?)"},
		{line: `CDC_RELAY_DRY_RUN=1 cdc-relay recover`, err: "read from the command line only"},
		{line: `tar -xzf a.tgz && ./cdc-relay --versio`, err: "flag --versio before the command"},
		{line: `cdc-relay run --slot "a`, err: "cannot read the command line"},
	}
	for _, tt := range tests {
		_, err := checkCommandLine(entries, tt.line)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v, want no problem", tt.line, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: got %v, want a problem with %q", tt.line, err, tt.err)
		}
	}
}

// TestCheckMarkdown: the blocks read, the lines of a session read, and
// where a problem is.
func TestCheckMarkdown(t *testing.T) {
	doc := strings.Join([]string{
		"# A page",                               // 1
		"",                                       // 2
		"```sh",                                  // 3
		"cdc-relay run \\",                       // 4
		"  --nope",                               // 5
		"```",                                    // 6
		"",                                       // 7
		"```",                                    // 8
		"$ cdc-relay status",                     // 9
		"cdc-relay v0.5.0: leader, ready",        // 10: output
		"$ cdc-relay failed lst",                 // 11
		"```",                                    // 12
		"```yaml",                                // 13
		"command: cdc-relay run --nope",          // 14: not a shell's
		"```",                                    // 15
		"```text",                                // 16
		"cdc-relay run --nope",                   // 17: not a shell's
		"```",                                    // 18
		"  ```bash",                              // 19
		"  ./bin/cdc-relay migrate --no-slot \\", // 20
		"```",                                    // 21
	}, "\n")
	checked, problems := checkMarkdown(cliEntries(t), doc)
	var got []string
	for _, p := range problems {
		got = append(got, fmt.Sprintf("%d: %s", p.line, strings.SplitN(p.msg, "\n", 2)[0]))
	}
	want := []string{
		"4: --nope is not a flag of cdc-relay run",
		"11: cdc-relay failed: unknown subcommand \"lst\" (did you mean list?)",
		"20: the line ends with \\ but the block ends: finish the command",
	}
	if checked != 4 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checked %d lines (want 4), problems:\n%s\nwant:\n%s", checked, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
