package admin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/status"
)

// Relay is what the server needs of the relay (*relay.Relay has it).
type Relay interface {
	Status() report.Status
	Pause() bool
	Resume() bool
	PauseTopic(ctx context.Context, topic string) (bool, error)
	ResumeTopic(ctx context.Context, topic string) (bool, error)
	Failed(ctx context.Context, opts status.ListOptions) ([]status.Row, error)
	Retry(ctx context.Context, opts status.RetryOptions) ([]status.Change, error)
	// Failures is the status store of one of the relay's publishers, for
	// ?publisher= (relay.Relay.Failures).
	Failures(publisher string) (*status.Store, error)
	// RetryOf retries the events of one of the relay's publishers, for
	// ?publisher= (relay.Relay.RetryOf): a new topic is checked, and held
	// in that publisher's key order, as Retry does Kafka's.
	RetryOf(ctx context.Context, publisher string, opts status.RetryOptions) ([]status.Change, error)
	// PauseTopicOf and ResumeTopicOf pause and resume one of the relay's
	// publishers' events of a topic, for ?publisher= (relay.Relay's): at
	// once in its streaming session, as PauseTopic does Kafka's.
	PauseTopicOf(ctx context.Context, publisher, topic string) (bool, error)
	ResumeTopicOf(ctx context.Context, publisher, topic string) (bool, error)
	// History is the relay's rate and commit-to-ack time over its last
	// hour, oldest first (relay.Relay.History), for the console.
	History() []report.Point
}

// Options configures a Server.
type Options struct {
	// Addr is the host:port to listen on; port 0 picks one (see
	// Server.Addr).
	Addr string
	// Token, if set, is the bearer token the admin endpoints require.
	Token string
	// Gatherer is what /metrics serves; nil serves nothing there.
	Gatherer prometheus.Gatherer
	// Logger receives the admin actions taken; nil discards.
	Logger *slog.Logger
}

// Server serves a relay's endpoints on one listener.
type Server struct {
	relay    Relay
	opts     Options
	loopback bool // the listener is on a loopback address
	ln       net.Listener
	srv      *http.Server
	console  *console // the pages under /ui
}

// Listen binds opts.Addr and starts serving r's endpoints until Close.
func Listen(r Relay, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	s := &Server{relay: r, opts: opts, ln: ln, loopback: isLoopback(ln.Addr())}
	if s.console, err = newConsole(s); err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = s.srv.Serve(ln) }() // returns http.ErrServerClosed after Close
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to a few seconds for requests in
// progress.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	if s.opts.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.opts.Gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /status", s.status)
	mux.HandleFunc("POST /pause", s.admin(s.pause))
	mux.HandleFunc("POST /resume", s.admin(s.resume))
	mux.HandleFunc("GET /failed", s.admin(s.failed))
	mux.HandleFunc("POST /failed/{id}/retry", s.admin(s.retry))
	s.console.routes(mux)
	return mux
}

// admin guards an admin endpoint with the token rule (see the package
// doc).
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		switch {
		case s.opts.Token != "":
			if !hasBearer(req, s.opts.Token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="cdc-relay"`)
				writeError(w, http.StatusUnauthorized, errors.New("this endpoint needs the header \"Authorization: Bearer <token>\" with the relay's --admin-token"))
				return
			}
		case !s.loopback:
			writeError(w, http.StatusForbidden, errors.New("admin endpoints on a non-loopback address need a token: start the relay with --admin-token (or CDC_RELAY_ADMIN_TOKEN)"))
			return
		case req.Header.Get("Origin") != "" || !loopbackHost(req.Host):
			// Without a token, loopback is the only proof of who asks; a web
			// page in a browser on this machine can reach loopback too (a
			// cross-site form, a rebound DNS name), and says so.
			writeError(w, http.StatusForbidden, errors.New("admin endpoints without a token answer only requests to a loopback address that do not come from a web page: set --admin-token to call them otherwise"))
			return
		}
		h(w, req)
	}
}

// hasBearer reports whether req carries "Authorization: Bearer <token>",
// compared in constant time.
func hasBearer(req *http.Request, token string) bool {
	scheme, got, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// loopbackHost reports whether a request's Host names a loopback address
// (localhost, 127.0.0.0/8, ::1), with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLoopback reports whether a listener's address is on loopback only.
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
