package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file is the console's rule, the API's (see the package doc) for a
// browser: a browser cannot send the bearer header on a navigation, so a
// sign-in form takes the token and sets a cookie derived from it; and
// every form that changes something carries a CSRF token and must come
// from the console's own origin.

// sessionCookie is the name of the console's cookie.
const sessionCookie = "cdc_relay_console"

// sessionMaxAge is how long a sign-in lasts.
const sessionMaxAge = 12 * time.Hour

// session is the cookie's value for a sign-in at issued: the time, and an
// HMAC of it keyed with this process's secret and the relay's token, so
// that the cookie proves the token was given without holding it, ends
// after sessionMaxAge, and ends with the process (or a new token).
func (c *console) session(issued time.Time) string {
	at := strconv.FormatInt(issued.Unix(), 10)
	return at + "." + c.sessionMAC(at)
}

// sessionMAC is the HMAC of a session's time at.
func (c *console) sessionMAC(at string) string {
	mac := hmac.New(sha256.New, append(slices.Clone(c.secret), c.s.opts.Token...))
	mac.Write([]byte("cdc-relay console session v2\x00" + at))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// validSession reports whether v is a session of this process and token,
// issued less than sessionMaxAge ago; its HMAC compared in constant time.
func (c *console) validSession(v string) bool {
	at, mac, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	issued, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return false
	}
	age := time.Since(time.Unix(issued, 0))
	return age < sessionMaxAge && age > -time.Minute && subtle.ConstantTimeCompare([]byte(mac), []byte(c.sessionMAC(at))) == 1
}

// signedIn reports whether req carries a valid console cookie, or the
// API's bearer header for the relay's token.
func (c *console) signedIn(req *http.Request) bool {
	if ck, err := req.Cookie(sessionCookie); err == nil && c.validSession(ck.Value) {
		return true
	}
	return hasBearer(req, c.s.opts.Token)
}

// csrfToken is the token the forms of a page for req carry: an HMAC keyed
// with this process's secret of the session it is for ("" without a
// token: the loopback rule's).
func (c *console) csrfToken(req *http.Request) string {
	var sess string
	if ck, err := req.Cookie(sessionCookie); err == nil {
		sess = ck.Value
	}
	mac := hmac.New(sha256.New, c.secret)
	mac.Write([]byte("csrf\x00" + sess))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// sameOrigin reports whether a request that changes something comes from
// the console's own pages, as the browser says: Sec-Fetch-Site, when
// sent, is same-origin, and Origin, when sent, is the request's host.
// Requests without either (a command-line client) rely on the CSRF token
// alone.
func sameOrigin(req *http.Request) bool {
	if site := req.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := req.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == req.Host
}

// guard applies the console's rule to a page: with a token, the cookie
// (else a GET goes to the sign-in page, anything else is a 401); without
// one, a loopback listener and a request naming a loopback host, as the
// API's; and a POST must come from the console's origin with the page's
// CSRF token.
func (c *console) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		switch {
		case c.s.opts.Token != "":
			if !c.signedIn(req) {
				if req.Method == http.MethodGet {
					securityHeaders(w)
					http.Redirect(w, req, "/ui/login", http.StatusSeeOther)
					return
				}
				c.refuse(w, req, http.StatusUnauthorized, "Sign in with the relay's admin token first.")
				return
			}
		case !c.s.loopback:
			c.refuse(w, req, http.StatusForbidden, "The console on a non-loopback address needs a token: "+
				"start the relay with --admin-token (or CDC_RELAY_ADMIN_TOKEN), or reach it through an SSH tunnel to a loopback listener.")
			return
		case !loopbackHost(req.Host):
			c.refuse(w, req, http.StatusForbidden, "Without a token the console answers only at a loopback address (localhost, 127.0.0.1, [::1]).")
			return
		}
		if req.Method == http.MethodPost && !c.fromConsole(w, req) {
			return
		}
		h(w, req)
	}
}

// fromConsole checks that a POST comes from one of the console's own
// pages: its origin, and the CSRF token of its form. It answers the
// refusal itself.
func (c *console) fromConsole(w http.ResponseWriter, req *http.Request) bool {
	if !sameOrigin(req) {
		c.log.Warn("console request from another site refused", "origin", req.Header.Get("Origin"),
			"sec_fetch_site", req.Header.Get("Sec-Fetch-Site"), "path", req.URL.Path, "from", req.RemoteAddr)
		c.refuse(w, req, http.StatusForbidden, "This request comes from another site: the console takes its forms from its own pages only.")
		return false
	}
	got := req.PostFormValue("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.csrfToken(req))) != 1 {
		c.log.Warn("console form without its CSRF token refused", "path", req.URL.Path, "from", req.RemoteAddr)
		c.refuse(w, req, http.StatusForbidden, "This form's token is missing or stale (the relay restarted?): open the page again and resubmit it.")
		return false
	}
	return true
}

// refuse answers a refused request with the message page.
func (c *console) refuse(w http.ResponseWriter, req *http.Request, code int, why string) {
	c.say(w, req, code, message{Heading: "Refused", Text: why, Error: true})
}

// loginData is the sign-in page's.
type loginData struct {
	Failed bool
}

// loginPage is the sign-in form; without a token there is nothing to sign
// in with: it goes to the overview, whose rule then applies.
func (c *console) loginPage(w http.ResponseWriter, req *http.Request) {
	if c.s.opts.Token == "" || c.signedIn(req) {
		securityHeaders(w)
		http.Redirect(w, req, "/ui", http.StatusSeeOther)
		return
	}
	c.render(w, req, http.StatusOK, "login", page{Title: "Sign in", Data: loginData{}})
}

// login checks the token of the sign-in form, in constant time, and sets
// the session cookie: HttpOnly, SameSite=Strict, for /ui only, Secure
// when the request came over TLS. The token is never logged.
func (c *console) login(w http.ResponseWriter, req *http.Request) {
	if c.s.opts.Token == "" {
		securityHeaders(w)
		http.Redirect(w, req, "/ui", http.StatusSeeOther)
		return
	}
	if !c.fromConsole(w, req) {
		return
	}
	if ok, wait := c.signIns.allow(req, time.Now()); !ok {
		c.log.Warn("console sign-in refused: too many wrong tokens from this address", "from", req.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		c.refuse(w, req, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong tokens from your address: try again in %d seconds.", int(wait.Seconds())+1))
		return
	}
	given := req.PostFormValue("token")
	// Compare the HMACs, of equal length whatever was given.
	mine, theirs := hmac.New(sha256.New, c.secret), hmac.New(sha256.New, c.secret)
	mine.Write([]byte(c.s.opts.Token))
	theirs.Write([]byte(given))
	if subtle.ConstantTimeCompare(mine.Sum(nil), theirs.Sum(nil)) != 1 {
		c.signIns.failed(req, time.Now())
		c.log.Warn("console sign-in refused: wrong token", "from", req.RemoteAddr)
		c.render(w, req, http.StatusUnauthorized, "login", page{Title: "Sign in", Data: loginData{Failed: true}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: c.session(time.Now()), Path: "/ui", HttpOnly: true,
		MaxAge: int(sessionMaxAge / time.Second), SameSite: http.SameSiteStrictMode, Secure: overTLS(req)})
	c.log.Info("console signed in", "from", req.RemoteAddr)
	securityHeaders(w)
	http.Redirect(w, req, "/ui", http.StatusSeeOther)
}

// overTLS reports whether the browser reached the console over HTTPS: on
// the relay's own listener, or through a proxy that terminates TLS and
// says so (X-Forwarded-Proto: https). The cookie is then Secure; the
// header only makes it stricter.
func overTLS(req *http.Request) bool {
	return req.TLS != nil || strings.EqualFold(req.Header.Get("X-Forwarded-Proto"), "https")
}

// logout clears the cookie.
func (c *console) logout(w http.ResponseWriter, req *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/ui", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(req)})
	securityHeaders(w)
	http.Redirect(w, req, "/ui/login", http.StatusSeeOther)
}
