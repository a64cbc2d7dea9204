package webhook

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// redacted stands for what a text must not show.
const redacted = "[redacted]"

// minMask is the shortest string masked in a text: a shorter query value
// (?v=1) is no token, and masking it would garble the text.
const minMask = 6

// showURL is u as errors and String show it: the scheme, the host and the
// path; the user information and the query string, where tokens go, as
// [redacted]; no fragment.
func showURL(u *url.URL) string {
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(redacted + "@")
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + redacted)
	}
	return b.String()
}

// ShowURL is raw, a URL, as the package shows it in errors and logs: the
// scheme, the host and the path, with the user information and the query
// string as [redacted]; "[redacted]" whole when raw is not an absolute
// URL.
func ShowURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return redacted
	}
	return showURL(u)
}

// urlMasks are the strings of u that a text must not show: its user name
// and password, its query string and each of the query's values, raw and
// decoded.
func urlMasks(u *url.URL) []string {
	var m []string
	if u.User != nil {
		m = append(m, u.User.Username())
		if p, ok := u.User.Password(); ok {
			m = append(m, p)
		}
	}
	if u.RawQuery != "" {
		m = append(m, u.RawQuery)
		for _, kv := range strings.Split(u.RawQuery, "&") {
			_, v, _ := strings.Cut(kv, "=")
			m = append(m, v)
			if dv, err := url.QueryUnescape(v); err == nil {
				m = append(m, dv)
			}
		}
	}
	return m
}

// headerMasks are the strings of static header values a text must not
// show: each value, and each of its space-separated words (the token of
// "Bearer <token>").
func headerMasks(h map[string]string) []string {
	var m []string
	for _, v := range h {
		m = append(m, v)
		m = append(m, strings.Fields(v)...)
	}
	return m
}

// mask replaces in s every one of masks with [redacted]. The masks are
// sortMasks's: the longest first, so that a value inside another is not
// left half shown.
func mask(s string, masks []string) string {
	for _, m := range masks {
		s = strings.ReplaceAll(s, m, redacted)
	}
	return s
}

// cutPartial drops from the end of b, the first bytes of a longer answer,
// the start of any of masks that b may end in the middle of, so that a
// token cut by the read is not shown in part.
func cutPartial(b []byte, masks []string) []byte {
	for _, m := range masks {
		for k := min(len(m)-1, len(b)); k > 0; k-- {
			if string(b[len(b)-k:]) == m[:k] {
				b = b[:len(b)-k]
				break
			}
		}
	}
	return b
}

// sortMasks orders masks longest first, dropping those too short to
// mask, as mask needs them.
func sortMasks(masks []string) []string {
	out := masks[:0:0]
	for _, m := range masks {
		if len(m) >= minMask {
			out = append(out, m)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: a handful of strings
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// excerpt is at most max bytes of b as one line of text for an error: a
// control character or an invalid UTF-8 byte becomes a space, runs of
// spaces become one, and a cut text ends with "…".
func excerpt(b []byte, max int) string {
	var out strings.Builder
	space := true // drops leading spaces
	for len(b) > 0 && out.Len() < max {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r == utf8.RuneError || r < ' ' || r == 0x7f {
			r = ' '
		}
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		out.WriteRune(r)
	}
	s := strings.TrimRight(out.String(), " ")
	if len(b) > 0 {
		s += "…"
	}
	return s
}
