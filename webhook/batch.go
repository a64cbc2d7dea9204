package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"mime"
	"strings"
	"time"
	"unicode/utf8"
)

// BatchID is the webhook-id of a batch of msgs: "batch_" and the
// unpadded base64url of the first 16 bytes of the SHA-256 of the events'
// ids in order, each preceded by its length as a uvarint (so that no two
// lists of ids give one input). The same events in the same order have
// the same id, however often they are sent; any other list another, with
// 128 bits of certainty. It holds no '.', as the specification asks.
func BatchID(msgs []Message) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, m := range msgs {
		h.Write(binary.AppendUvarint(n[:0], uint64(len(m.ID))))
		h.Write([]byte(m.ID))
	}
	var sum [sha256.Size]byte
	return "batch_" + base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:16])
}

// appendBatch appends the JSON array of msgs that Send describes to b.
func appendBatch(b []byte, msgs []Message) []byte {
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendElement(b, m)
	}
	return append(b, ']')
}

// appendElement appends one event's element of a batch to b.
func appendElement(b []byte, m Message) []byte {
	ct := m.ContentType
	if ct == "" {
		ct = defaultContentType
	}
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	if !m.Time.IsZero() {
		b = append(b, `,"timestamp":"`...)
		b = m.Time.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"content_type":`...)
	b = appendString(b, ct)
	b = append(b, `,"headers":{`...)
	first := true
	for i, h := range m.Headers {
		if lastOf(m.Headers, i) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendString(b, h.Key)
			b = append(b, ':')
			b = appendString(b, string(h.Value))
		}
	}
	b = append(b, '}')
	switch {
	case m.Payload == nil:
		b = append(b, `,"payload":null`...)
	case isJSONType(ct) && json.Valid(m.Payload):
		b = append(b, `,"payload":`...)
		b = append(b, m.Payload...)
	case utf8.Valid(m.Payload):
		b = append(b, `,"payload":`...)
		b = appendString(b, string(m.Payload))
	default:
		b = append(b, `,"payload_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, m.Payload)
		b = append(b, '"')
	}
	return append(b, '}')
}

// lastOf reports whether headers[i] is the last header of its key.
func lastOf(headers []Header, i int) bool {
	for _, h := range headers[i+1:] {
		if h.Key == headers[i].Key {
			return false
		}
	}
	return true
}

// isJSONType reports whether the media type ct is JSON: application/json
// or a +json type, parameters aside.
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// appendString appends s to b as a JSON string: '"' and '\' escaped, the
// control characters as \u00XX (or \n, \r, \t), an invalid UTF-8 byte as
// U+FFFD, the rest as it is.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < ' ':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
