package status

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// jsonRow is Row's JSON, for scripts: the key is text, or base64 when it
// is not UTF-8 (key_encoding says which); the value is JSON when it is
// valid JSON, else text, else base64 (value_encoding); times are UTC;
// absent values are null (source_table, the event's outbox table, too, in
// rows parked before the status table recorded it; original_topic unless
// an operator corrected the topic). publisher is there only for a row of
// another publisher than Kafka (KafkaPublisher), so that a Kafka row's
// JSON is what it was before the status table knew publishers. partition
// is there only for an event its table's partition column placed.
type jsonRow struct {
	ID            int64        `json:"id"`
	Status        string       `json:"status"`
	Attempts      int          `json:"attempts"`
	NextAttemptAt time.Time    `json:"next_attempt_at"`
	LastError     string       `json:"last_error"`
	SourceTable   *string      `json:"source_table"`
	Topic         string       `json:"topic"`
	EventID       *string      `json:"event_id"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         any          `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
	Timestamp     *time.Time   `json:"timestamp"`
	CommitLSN     string       `json:"commit_lsn"`
	CreatedAt     time.Time    `json:"created_at"`
	UpdatedAt     time.Time    `json:"updated_at"`
	DeliveredAt   *time.Time   `json:"delivered_at"`
	Reload        bool         `json:"reload"`
	WaitsFor      int64        `json:"waits_for"`
	SkippedAt     *time.Time   `json:"skipped_at"`
	OriginalTopic *string      `json:"original_topic"`
	Publisher     string       `json:"publisher,omitempty"`
	Partition     *int32       `json:"partition,omitempty"`
}

// jsonHeader is a record header; a NULL value is null.
type jsonHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// MarshalJSON encodes r as `cdc-relay failed list --json` and the admin
// endpoint GET /failed show it (see jsonRow).
func (r Row) MarshalJSON() ([]byte, error) { return json.Marshal(toJSON(r)) }

func toJSON(r Row) jsonRow {
	j := jsonRow{
		ID: r.ID, Status: r.Status, Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt.UTC(), LastError: r.LastError,
		Topic: r.Topic, Headers: []jsonHeader{}, CommitLSN: r.CommitLSN.String(),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Reload: r.Reload,
		SourceTable: optString(r.SourceTable != "", r.SourceTable), EventID: optString(r.EventID != "", r.EventID), Timestamp: optTime(r.Timestamp), DeliveredAt: optTime(r.DeliveredAt),
		WaitsFor: r.WaitsFor, SkippedAt: optTime(r.Skipped), OriginalTopic: optString(r.OriginalTopic != "", r.OriginalTopic),
	}
	if r.Publisher != KafkaPublisher {
		j.Publisher = r.Publisher
	}
	if r.Placed {
		j.Partition = &r.Partition
	}
	if r.Key != nil {
		j.KeyEncoding, j.Key = "text", optString(true, string(r.Key))
		if !utf8.Valid(r.Key) {
			j.KeyEncoding, j.Key = "base64", optString(true, base64.StdEncoding.EncodeToString(r.Key))
		}
	}
	switch {
	case r.Value == nil:
	case json.Valid(r.Value):
		j.ValueEncoding, j.Value = "json", json.RawMessage(r.Value)
	case utf8.Valid(r.Value):
		j.ValueEncoding, j.Value = "text", string(r.Value)
	default:
		j.ValueEncoding, j.Value = "base64", base64.StdEncoding.EncodeToString(r.Value)
	}
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		if h.Value != nil {
			jh.Value = optString(true, string(h.Value))
		}
		j.Headers = append(j.Headers, jh)
	}
	return j
}

func optString(ok bool, s string) *string {
	if !ok {
		return nil
	}
	return &s
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
