package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"gopkg.in/yaml.v3"
)

// maxFileSize is the most bytes Load reads. A config file lists settings
// and tables: a few KB; a larger file is not one (a log, a dump, a device).
const maxFileSize = 1 << 20

// Load reads and parses the config file at path; see [Parse]. A file over
// 1 MiB is refused before it is read or parsed, with an error that says
// its size and the limit.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the config file: %w", err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxFileSize {
		return nil, tooLarge(path, fmt.Sprintf("%d bytes", st.Size()))
	}
	// A pipe or a device has no size to check: read one byte past the
	// limit at most.
	data, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read the config file: %w", err)
	}
	if len(data) > maxFileSize {
		return nil, tooLarge(path, fmt.Sprintf("over %d bytes", maxFileSize))
	}
	return Parse(path, data)
}

// tooLarge is Load's error for a file over maxFileSize; size says how
// large it is.
func tooLarge(path, size string) error {
	return fmt.Errorf("the config file %s is too large: %s, the limit is %d bytes (1 MiB); "+
		"a config file of settings and tables is a few KB: check that this is the config file", path, size, maxFileSize)
}

// Parse parses a config file's contents; name is the file's name, for
// the errors. It checks what can be checked without the database and
// returns [Problems] listing every mistake, each with its line: unknown
// keys (with the key they may misspell), values of the wrong kind,
// duplicate keys, neither tables nor messages, a table or a message
// prefix listed twice, a table without value, without topic,
// topic_column or routes, routes beside topic or topic_column or without
// tags_column, a route without topic or tags, write_back without
// status_column, delivered, failed or id, write_back values that mean two
// outcomes (failed or dead the delivered value, a pending value one the
// relay writes, a pending value listed twice), write_back columns that
// are the same column or the id column, a message source without prefix,
// payload_only without topic, key_field or id_field without
// payload_only, a malformed topic template, an illegal topic, a bad slot
// name or allowed_topics; a publisher named kafka or badly, without
// webhook, or whose webhook section webhook.Config.Validate refuses; a
// publishers list that is empty, names one twice or names one the file
// does not define (with the name it may misspell); publishers on a
// message source. No error shows the value of postgres_url, nor of a
// webhook's headers, nor its URL's query or user information. What it
// accepts but is usually a mistake is in the File's Warnings.
func Parse(name string, data []byte) (*File, error) {
	p := &parser{name: name}
	f := &File{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		p.problem(1, emptyFile)
		return nil, p.problems
	case err != nil:
		return nil, Problems{p.yamlError(err)}
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		p.problem(more.Line, "a second YAML document (after ---): put everything in one")
	} else if !errors.Is(err, io.EOF) {
		p.problems = append(p.problems, p.yamlError(err))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p.file(root, f)
	if len(p.problems) > 0 {
		sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
		return nil, p.problems
	}
	f.Warnings = p.warnings
	return f, nil
}
