package decoder

import (
	"encoding/json"
	"errors"
	"fmt"
)

// envelopeMembers lists the members an envelope may have, for the reason
// an envelope with another is parked.
const envelopeMembers = "topic, key, id, headers and payload"

// parts are the record's parts a message's content gives, as spans of the
// event's own copy of the content or new slices.
type parts struct {
	// topic is nil when the content names none: the mapping's Topic.
	topic []byte
	// key and id are nil when the content gives none.
	key, id []byte
	// headers is a JSON object's text, or nil.
	headers []byte
	value   []byte
}

// envelopeParts reads an envelope: a JSON object of the members topic,
// key, id, headers and payload. The error is the first reason the content
// cannot become a record; the parts then hold what could be read.
func envelopeParts(content []byte) (parts, error) {
	var p parts
	m, err := envelopeMembersOf(content)
	if m.topic != nil && !isNull(m.topic) {
		if m.topic[0] == '"' {
			p.topic = jsonString(m.topic)
		} else {
			err = firstError(err, fmt.Errorf(`the envelope's member "topic" is %s: want a string, or null for the topic of the prefix's config`, jsonKind(m.topic)))
		}
	}
	var kerr, ierr error
	p.key, kerr = keyText(`the envelope's member "key"`, m.key)
	p.id, ierr = keyText(`the envelope's member "id"`, m.id)
	err = firstError(err, kerr, ierr)
	if m.headers != nil && !isNull(m.headers) {
		if m.headers[0] == '{' {
			p.headers = m.headers
		} else {
			err = firstError(err, fmt.Errorf(`the envelope's member "headers" is %s: want an object, or null`, jsonKind(m.headers)))
		}
	}
	switch {
	case m.payload == nil, isNull(m.payload):
	case m.payload[0] == '"':
		p.value = jsonString(m.payload)
	default:
		p.value = m.payload
	}
	return p, err
}

// envelope holds each member of an envelope as its JSON text, nil when
// absent.
type envelope struct {
	topic, key, id, headers, payload []byte
}

// envelopeMembersOf finds the members of an envelope. The error says why
// content is not one: not a JSON object, a member it may not have or has
// twice, no payload.
func envelopeMembersOf(content []byte) (envelope, error) {
	var e envelope
	if err := jsonObject(content); err != nil {
		return e, fmt.Errorf("%w; want an envelope: a JSON object with the members %s (cdc_relay.emit writes one)", err, envelopeMembers)
	}
	var err error
	r, _ := newObjectReader(content)
	for name, value, ok := r.next(); ok; name, value, ok = r.next() {
		var member *[]byte
		switch string(name) {
		case "topic":
			member = &e.topic
		case "key":
			member = &e.key
		case "id":
			member = &e.id
		case "headers":
			member = &e.headers
		case "payload":
			member = &e.payload
		default:
			err = firstError(err, fmt.Errorf("the envelope has a member %q: an envelope's members are %s only", name, envelopeMembers))
			continue
		}
		if *member != nil {
			err = firstError(err, fmt.Errorf("the envelope has the member %q twice", name))
		}
		*member = value
	}
	if e.payload == nil {
		err = firstError(err, errors.New(`the envelope has no member "payload": give it, null for a record without a value`))
	}
	return e, err
}

// payloadOnlyParts reads the content of a payload-only message: the whole
// content is the value, and the members m.KeyField and m.IDField of its
// JSON object the key and the id.
func payloadOnlyParts(m MessageMapping, content []byte) (parts, error) {
	p := parts{value: content}
	if m.KeyField == "" && m.IDField == "" {
		return p, nil
	}
	if err := jsonObject(content); err != nil {
		return p, fmt.Errorf("%w; key_field and id_field name members of a JSON object", err)
	}
	var key, id []byte
	var err error
	r, _ := newObjectReader(content)
	for name, value, ok := r.next(); ok; name, value, ok = r.next() {
		if m.KeyField != "" && string(name) == m.KeyField {
			if key != nil {
				err = firstError(err, fmt.Errorf("the content has the member %q (key_field) twice", name))
			}
			key = value
		}
		if m.IDField != "" && string(name) == m.IDField {
			if id != nil {
				err = firstError(err, fmt.Errorf("the content has the member %q (id_field) twice", name))
			}
			id = value
		}
	}
	var kerr, ierr error
	p.key, kerr = keyText(fmt.Sprintf("the content's member %q (key_field)", m.KeyField), key)
	p.id, ierr = keyText(fmt.Sprintf("the content's member %q (id_field)", m.IDField), id)
	return p, firstError(err, kerr, ierr)
}

// keyText is the text of a key or an id given as the JSON value v: a
// string's text, a number's JSON text, nil for null or nil. Any other
// value is refused, with what names it.
func keyText(what string, v []byte) ([]byte, error) {
	switch {
	case v == nil || isNull(v):
		return nil, nil
	case v[0] == '"':
		return jsonString(v), nil
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		return v, nil
	default:
		return nil, fmt.Errorf("%s is %s: want a string, a number or null", what, jsonKind(v))
	}
}

// jsonObject says why content is not a JSON object, or returns nil.
func jsonObject(content []byte) error {
	if !validJSON(content) {
		return fmt.Errorf("the content is not JSON (%v)", json.Unmarshal(content, new(json.RawMessage)))
	}
	if v := content[skipSpace(content, 0):]; v[0] != '{' {
		return fmt.Errorf("the content is %s, not a JSON object", jsonKind(v))
	}
	return nil
}

// firstError returns the first of errs that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
