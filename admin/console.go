package admin

import (
	"bytes"
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"
)

// This file is the console's frame: the pages under /ui, the rule that
// guards them (console_auth.go) and the templates they are rendered from.

//go:embed console
var consoleFiles embed.FS

// consoleCSP is the console's Content-Security-Policy: nothing from
// elsewhere, no script at all, forms posted only to the console itself.
const consoleCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

// console serves the operator's console of a Server: server-rendered
// pages over the same Relay as the API, under the same token.
type console struct {
	s *Server
	// secret keys the CSRF tokens of this process's forms: random at each
	// start, so that a token of a form rendered before a restart is
	// refused after it.
	secret []byte
	pages  map[string]*template.Template // by the page's file name
	log    *slog.Logger
	// signIns limits wrong tokens per address.
	signIns signInLimiter
}

// newConsole parses the console's templates, which are embedded: an error
// is a bug of this package.
func newConsole(s *Server) (*console, error) {
	c := &console{s: s, secret: make([]byte, 32), pages: map[string]*template.Template{}, log: s.opts.Logger}
	if _, err := rand.Read(c.secret); err != nil {
		return nil, err
	}
	names, err := fs.Glob(consoleFiles, "console/*.html")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		base := path.Base(name)
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(consoleFuncs()).ParseFS(consoleFiles, "console/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", base, err)
		}
		c.pages[strings.TrimSuffix(base, ".html")] = t
	}
	return c, nil
}

// routes adds the console's pages to mux.
func (c *console) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /ui/static/console.css", c.css)
	mux.HandleFunc("GET /ui/login", c.loginPage)
	mux.HandleFunc("POST /ui/login", c.login)
	mux.HandleFunc("POST /ui/logout", c.guard(c.logout))
	mux.HandleFunc("GET /ui", c.guard(c.overview))
	mux.HandleFunc("GET /ui/{$}", c.guard(c.overview))
	mux.HandleFunc("GET /ui/events", c.guard(c.events))
	mux.HandleFunc("GET /ui/events/{id}", c.guard(c.event))
	mux.HandleFunc("GET /ui/events/{id}/confirm", c.guard(c.confirm))
	mux.HandleFunc("POST /ui/events/{id}/{action}", c.guard(c.act))
	mux.HandleFunc("GET /ui/topics", c.guard(c.topics))
	mux.HandleFunc("POST /ui/topics/{action}", c.guard(c.pauseTopic))
}

// page is what every page's template receives.
type page struct {
	Title string
	// Nav is the section the page belongs to: overview, events, topics.
	Nav string
	// CSRF is the token the page's forms that change something carry.
	CSRF string
	// SignedIn says the relay has a token and the browser signed in with
	// it: the page offers to sign out.
	SignedIn bool
	Data     any
}

// securityHeaders are the headers of every console answer: the CSP, no
// caching of pages that show payloads, no framing, no referrer to
// another site.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" makes Chromium send "Origin: null" on the console's own forms
	h.Set("Cache-Control", "no-store")
}

// render writes the page name with data, or a plain 500 if the template
// fails (before anything is written: it renders into a buffer).
func (c *console) render(w http.ResponseWriter, req *http.Request, code int, name string, p page) {
	p.CSRF = c.csrfToken(req)
	p.SignedIn = c.s.opts.Token != ""
	var b bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&b, "layout.html", p); err != nil {
		c.log.Error("console page failed", "page", name, "error", err)
		http.Error(w, "the page failed to render: see the relay's log", http.StatusInternalServerError)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// message is the data of the message page: what an action did, or why a
// request was refused.
type message struct {
	Heading string
	Text    string
	Error   bool
	// Back links to where to go on.
	Back, BackText string
}

// say renders the message page.
func (c *console) say(w http.ResponseWriter, req *http.Request, code int, m message) {
	if m.Back == "" {
		m.Back, m.BackText = "/ui", "Overview"
	}
	c.render(w, req, code, "message", page{Title: m.Heading, Data: m})
}

func (c *console) css(w http.ResponseWriter, _ *http.Request) {
	b, err := consoleFiles.ReadFile("console/console.css")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(b)
}

// consoleFuncs are the templates' functions.
func consoleFuncs() template.FuncMap {
	return template.FuncMap{
		"bytes":   humanBytes,
		"seconds": func(s float64) string { return humanDuration(time.Duration(s * float64(time.Second))) },
		"since":   func(t time.Time) string { return humanDuration(time.Since(t)) },
		"time":    formatTime,
		"text":    recordText,
		"short":   func(s string) string { return shorten(s, 80) },
	}
}
