package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Problem is one mistake in a config file.
type Problem struct {
	// File is the file's name, as given to [Parse].
	File string
	// Line is the line of the mistake (1 for the file as a whole).
	Line int
	// Msg says what is wrong and what to do.
	Msg string
}

func (p *Problem) Error() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Problems are every mistake [Parse] found in a file, in the order of
// their lines. Its Error puts each on its own line.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// parser walks the YAML nodes of one file and collects its problems, and
// its warnings: what is allowed but is usually a mistake.
type parser struct {
	name     string
	problems Problems
	warnings Problems
	uses     []PublisherUse // the publishers tables and routes name, checked once every one is read
	defined  []string       // the names publishers: defines, each once, valid or not
}

func (p *parser) warn(line int, format string, args ...any) {
	p.warnings = append(p.warnings, &Problem{File: p.name, Line: max(line, 1), Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) problem(line int, format string, args ...any) {
	if line < 1 {
		line = 1
	}
	p.problems = append(p.problems, &Problem{File: p.name, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// yamlLine is the line yaml.v3 names in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError turns a YAML syntax error into a Problem at its line.
func (p *parser) yamlError(err error) *Problem {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &Problem{File: p.name, Line: line, Msg: "not valid YAML: " + msg}
}
