package decoder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// logicalMessage decodes a logical decoding message (pgoutput's Message,
// protocol version 1): flags (1: transactional, 0: not), the message's LSN
// (the end of its WAL record, what pg_logical_emit_message returned), the
// prefix, then the content's length and bytes. A transactional message of
// a mapped prefix is an event, one of another prefix KindUnmappedMessage;
// a non-transactional one is KindNonTransactionalMessage when its prefix
// is mapped, else ignored.
func (d *Decoder) logicalMessage(b []byte) (Message, error) {
	if len(b) < 9 {
		return Message{}, malformed("short Message (%d bytes)", len(b)+1)
	}
	if b[0] > 1 {
		return Message{}, malformed("Message with flags %#x (known: 1, transactional)", b[0])
	}
	transactional := b[0] == 1
	lsn := binary.BigEndian.Uint64(b[1:9])
	end := bytes.IndexByte(b[9:], 0)
	if end < 0 {
		return Message{}, malformed("Message with an unterminated prefix")
	}
	prefix, b := b[9:9+end], b[9+end+1:]
	if len(b) < 4 {
		return Message{}, malformed("short Message of prefix %q: no content length", prefix)
	}
	if n := binary.BigEndian.Uint32(b); uint64(n) != uint64(len(b)-4) {
		return Message{}, malformed("Message of prefix %q: content of %d bytes in %d", prefix, n, len(b)-4)
	}
	src := d.source(prefix)
	if !transactional {
		if src == nil {
			return Message{}, nil
		}
		return Message{Kind: KindNonTransactionalMessage, Prefix: src.m.Prefix}, nil
	}
	if src == nil {
		return Message{Kind: KindUnmappedMessage, Prefix: d.unmappedPrefix(prefix)}, nil
	}
	return d.messageEvent(src, lsn, b[4:]), nil
}

// messageEvent makes the Message of a transactional message of src written
// at lsn: the record the content gives, in the transaction's commit order
// and at its commit time, or the reason it cannot become one, with the
// payload as the value when the content could be read, else the whole
// content. content is only read during the call.
func (d *Decoder) messageEvent(src *source, lsn uint64, content []byte) Message {
	msg := Message{Kind: KindEvent}
	ev := &msg.Event
	ev.Table, ev.CommitLSN, ev.Timestamp = src.index, d.commitLSN, d.commitTime
	var p parts
	var unread error // the content is no envelope (or payload) to read
	if src.m.PayloadOnly {
		p, unread = payloadOnlyParts(src.m, content)
	} else {
		p, unread = envelopeParts(content)
	}
	err := unread
	// The id header first, its value set below; it wins over a member
	// "id" of the headers.
	ev.Headers = append(d.headers[:0], Header{Key: "id"})
	if p.headers != nil {
		var herr error
		if ev.Headers, herr = appendJSONHeaders(ev.Headers, 1, p.headers); herr != nil {
			err = firstError(err, fmt.Errorf(`the envelope's member "headers": %w`, herr))
		}
	}
	err = firstError(err, d.messageTopic(src, p.topic, ev))
	if unread != nil {
		// What the application wrote, for the parked row: there is no
		// payload to tell from it.
		err = fmt.Errorf("%w (the parked value is the message's whole content)", err)
		p.value = content
	}
	if err != nil {
		// A content read but refused (its topic, its headers) keeps its
		// payload as the value, so that a retry to a corrected topic
		// sends the record the application meant.
		msg.Poison = fmt.Errorf("messages %q: %w", src.m.Prefix, err)
	}
	ownParts(ev, p, lsn)
	ev.Headers[0].Value = ev.ID
	d.headers = ev.Headers[:0]
	return msg
}

// ownParts sets the event's key, value and id to copies of the parts', in
// one buffer of exactly their size; the id is the message's WAL position
// when the content gives none. The event holds nothing else of the
// content (not the envelope around the payload), so Event.Size covers
// what it holds.
func ownParts(ev *Event, p parts, lsn uint64) {
	n := len(p.key) + len(p.value) + len(p.id)
	if p.id == nil {
		n += len("FFFFFFFF/FFFFFFFF")
	}
	buf := make([]byte, 0, n)
	ev.Key, buf = appendPart(buf, p.key)
	ev.Value, buf = appendPart(buf, p.value)
	if p.id == nil {
		start := len(buf)
		buf = appendLSN(buf, lsn)
		ev.ID = buf[start:len(buf):len(buf)]
		return
	}
	ev.ID, _ = appendPart(buf, p.id)
}

// appendPart appends part to buf and returns where it is in buf (nil for
// nil) and buf.
func appendPart(buf, part []byte) (at, grown []byte) {
	if part == nil {
		return nil, buf
	}
	start := len(buf)
	buf = append(buf, part...)
	return buf[start:len(buf):len(buf)], buf
}

// messageTopic sets ev.Topic to topic, or to the mapping's when topic is
// nil, and says why it cannot be used.
func (d *Decoder) messageTopic(src *source, topic []byte, ev *Event) error {
	if topic == nil {
		if src.m.Topic == "" {
			return fmt.Errorf(`the envelope names no topic and messages: gives none for the prefix: give the envelope a member "topic" (cdc_relay.emit's first argument), or the prefix a topic under messages: in the config file`)
		}
		ev.Topic = src.m.Topic
		return nil
	}
	var err error
	ev.Topic, err = src.topics.get(topic)
	return err
}

// appendLSN appends lsn in PostgreSQL's form, as pglogrepl.LSN prints it:
// the high and low 32 bits in upper-case hexadecimal, "0/16B3748".
func appendLSN(b []byte, lsn uint64) []byte {
	b = appendUpperHex(b, lsn>>32)
	b = append(b, '/')
	return appendUpperHex(b, lsn&0xFFFFFFFF)
}

// appendUpperHex appends v in upper-case hexadecimal.
func appendUpperHex(b []byte, v uint64) []byte {
	start := len(b)
	b = strconv.AppendUint(b, v, 16)
	for i := start; i < len(b); i++ {
		if c := b[i]; c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return b
}
