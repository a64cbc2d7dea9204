package decoder

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// appendJSONHeaders adds each key of a JSON object as a header, except
// the keys already among hs[:own]. String values are sent unquoted; null as
// a null header; anything else as its JSON text.
func appendJSONHeaders(hs []Header, own int, obj []byte) ([]Header, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return hs, fmt.Errorf("not a JSON object: %w", err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mine := hs[:own:own]
	for _, k := range keys {
		if slices.ContainsFunc(mine, func(h Header) bool { return h.Key == k }) {
			continue
		}
		raw := m[k]
		var v []byte
		switch {
		case len(raw) > 0 && raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return hs, fmt.Errorf("header %q: %w", k, err)
			}
			v = []byte(s)
		case string(raw) == "null":
			v = nil
		default:
			v = raw
		}
		hs = append(hs, Header{Key: k, Value: v})
	}
	return hs, nil
}

// parseTimestamp parses a timestamp column's text. The replication
// connection runs with DateStyle=ISO and TimeZone=UTC, so timestamptz reads
// "2006-01-02 15:04:05.999999+00"; a timestamp without time zone is wall
// time in loc (nil: UTC); a bigint is read in unit (unset: by its
// magnitude, as recover judges the column). An unparsable value
// (infinity, BC dates) gives the zero time, and the producer stamps the
// record itself.
func parseTimestamp(b []byte, typ uint32, unit TimestampUnit, loc *time.Location) time.Time {
	if typ == oidTimestamptz {
		if t, ok := parseUTC(b); ok {
			return t
		}
	}
	s := string(b)
	switch typ {
	case oidInt8:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}
		}
		return unit.Time(v)
	case oidTimestamp:
		if loc == nil {
			loc = time.UTC
		}
		t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", s, loc)
		if err != nil {
			return time.Time{}
		}
		return t
	default:
		for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999-07:00:00"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t
			}
		}
		return time.Time{}
	}
}

// parseUTC parses the form the relay's session renders every timestamptz in
// (TimeZone=UTC, DateStyle=ISO): "2006-01-02 15:04:05[.ffffff]+00", without
// time.Parse's generality. It is on the per-event path.
func parseUTC(b []byte) (time.Time, bool) {
	n := len(b)
	if n < 22 || b[4] != '-' || b[7] != '-' || b[10] != ' ' || b[13] != ':' || b[16] != ':' ||
		b[n-3] != '+' || b[n-2] != '0' || b[n-1] != '0' {
		return time.Time{}, false
	}
	num := func(b []byte) (int, bool) {
		v := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : n-3]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) > 10 {
			return time.Time{}, false
		}
		f, ok := num(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			f *= 10
		}
		nsec = f
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// unhex decodes, in place, a bytea column's text form (\x followed by hex,
// PostgreSQL's bytea_output = hex, which the relay's replication
// connection sets) to the bytes it stands for: a Protobuf or Avro payload
// is sent as itself. data must be the event's own copy.
func unhex(data []byte, column string) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	if len(data) < 2 || data[0] != '\\' || data[1] != 'x' {
		return data, fmt.Errorf("bytea column %q is not in hex form (\\x…): set bytea_output = hex for the relay's role", column)
	}
	n, err := hex.Decode(data, data[2:]) // each byte written is behind the two read
	if err != nil {
		return data, fmt.Errorf("bytea column %q: %w", column, err)
	}
	return data[:n:n], nil
}
