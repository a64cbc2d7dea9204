package outbox

import (
	"fmt"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// Sources are where a relay's events come from: its outbox tables, then
// its message sources (prefixes of pg_logical_emit_message). Reserved are
// the relay's own topics, which no event of any source may go to
// (decoder.Mapping.ReservedTopics).
type Sources struct {
	Tables   []Table
	Messages []decoder.MessageMapping
	Reserved []string
}

// TableNames names the outbox tables, schema.table, in order.
func (s Sources) TableNames() []string {
	names := make([]string, len(s.Tables))
	for i, t := range s.Tables {
		names[i] = t.Mapping.Schema + "." + t.Mapping.Table
	}
	return names
}

// Names names the sources by the decoder's Event.Table: the outbox tables
// (TableNames), then the message sources (decoder.MessageMapping.Name,
// "message:outbox"). The status table's source_table, the metrics' table
// label and the log name them so.
func (s Sources) Names() []string {
	names := s.TableNames()
	for _, m := range s.Messages {
		names = append(names, m.Name())
	}
	return names
}

// Mappings returns the mapping of each table, in order, each refusing the
// reserved topics.
func (s Sources) Mappings() []decoder.Mapping {
	ms := make([]decoder.Mapping, len(s.Tables))
	for i, t := range s.Tables {
		ms[i] = t.Mapping
		ms[i].ReservedTopics = s.Reserved
	}
	return ms
}

// MessageMappings returns the message sources, each refusing the reserved
// topics as Mappings' tables do.
func (s Sources) MessageMappings() []decoder.MessageMapping {
	ms := make([]decoder.MessageMapping, len(s.Messages))
	for i, m := range s.Messages {
		ms[i] = m
		ms[i].ReservedTopics = s.Reserved
	}
	return ms
}

// Validate checks what can be checked of the sources without the
// database, but the decoder's own checks (Decoder): that there is
// something to relay, each table's adopt predicates (Table.ValidateAdopt:
// the id column, no more route predicates than routes, a predicate given
// per publisher for every publisher of its events), and each message
// source (a prefix each, none twice).
func (s Sources) Validate() error {
	names := s.TableNames()
	for i, t := range s.Tables {
		if err := t.ValidateAdopt(names[i]); err != nil {
			return err
		}
	}
	if len(s.Tables) == 0 && len(s.Messages) == 0 {
		return fmt.Errorf("nothing to relay: give an outbox table, or messages (--message-prefix, or messages: in the config file)")
	}
	seen := make(map[string]bool, len(s.Messages))
	for _, m := range s.Messages {
		if err := m.Validate(); err != nil {
			return err
		}
		if seen[m.Prefix] {
			return fmt.Errorf("messages %q: the prefix is given twice; give each prefix once", m.Prefix)
		}
		seen[m.Prefix] = true
	}
	return nil
}

// Decoder returns the decoder of the sources (decoder.NewSources), or why
// their mappings cannot make one.
func (s Sources) Decoder() (*decoder.Decoder, error) {
	return decoder.NewSources(s.Mappings(), s.MessageMappings())
}

// TopicCheck returns the check of a topic an event of a source goes to,
// which the poller and a corrected topic (`failed retry --topic`) must
// pass as the stream does: source is the event's source as the status
// table's source_table names it (Names: a table's schema.table, a message
// source's message:<prefix>), and the event's topic must pass that
// source's check (decoder.Mapping.TopicCheck, by its AllowedTopics). An
// event of a source not named here (a table since removed, or a row parked
// before sources were recorded) must pass the check of every source: only
// a topic all of them allow.
func (s Sources) TopicCheck() (func(source, topic string) error, error) {
	names := s.Names()
	checks := make(map[string]func(string) error, len(names))
	all := make([]func(string) error, 0, len(names))
	for i, name := range names {
		allowed := ""
		if i < len(s.Tables) {
			allowed = s.Tables[i].Mapping.AllowedTopics
		} else {
			allowed = s.Messages[i-len(s.Tables)].AllowedTopics
		}
		check, err := decoder.Mapping{AllowedTopics: allowed, ReservedTopics: s.Reserved}.TopicCheck()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		checks[name] = check
		all = append(all, check)
	}
	return func(source, topic string) error {
		if check, ok := checks[source]; ok {
			return check(topic)
		}
		return checkEvery(all, topic)
	}, nil
}

// checkEvery is the check of a topic of an event whose source is not
// named: the first refusal of checks, or with no checks only Kafka's
// rules.
func checkEvery(checks []func(string) error, topic string) error {
	if err := decoder.ValidTopic(topic); err != nil {
		return err
	}
	for _, check := range checks {
		if err := check(topic); err != nil {
			return err
		}
	}
	return nil
}
