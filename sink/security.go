package sink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialTimeout bounds a TCP connect when the caller gives no dialer, and a
// TLS handshake (franz-go's default for both).
const dialTimeout = 10 * time.Second

// tlsDialer returns a dialer that dials with dial, then makes the
// connection TLS with a clone of cfg, whose ServerName, when empty, is the
// host dialed, and completes the handshake within dialTimeout or ctx. It
// is franz-go's DialTLSConfig (which cannot be combined with a dialer of
// one's own) over any dialer: the relay's sets TCP keepalives.
func tlsDialer(dial func(ctx context.Context, network, host string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		c := cfg.Clone()
		if c.ServerName == "" {
			name, _, err := net.SplitHostPort(host)
			if err != nil {
				return nil, fmt.Errorf("broker address %q: %w", host, err)
			}
			c.ServerName = name
		}
		raw, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", host, err)
		}
		return conn, nil
	}
}

// ErrSASLClosed is the error of a SASL authentication that the broker
// ended by closing the connection instead of answering: what a broker that
// predates Kafka 1.0's SaslAuthenticate, or kfake, does on wrong
// credentials, and what a listener that expects no SASL may do. [Sink.Ping]
// returns it, wrapped, when its connection ended so.
var ErrSASLClosed = errors.New("the broker closed the connection during SASL authentication")

// saslWatch is a franz-go hook that remembers the last SASL request
// (handshake or authenticate) that failed to be written or answered.
type saslWatch struct {
	last atomic.Pointer[saslFailure]
}

type saslFailure struct {
	addr string
	err  error
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (w *saslWatch) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != int16(kmsg.SASLHandshake) && key != int16(kmsg.SASLAuthenticate) {
		return
	}
	if err := e2e.Err(); err != nil {
		w.last.Store(&saslFailure{addr: net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), err: err})
	}
}

// take returns the failure recorded since the last take, or nil.
func (w *saslWatch) take() *saslFailure { return w.last.Swap(nil) }

// Ping checks that a broker answers. An error that [AuthFailed] reports is
// confirmed on a second, new connection first, so that a broker that
// happened to close a connection is not taken for one refusing the
// client. A connection that the broker closed during SASL authentication
// fails with [ErrSASLClosed].
func (s *Sink) Ping(ctx context.Context) error {
	err := s.ping(ctx)
	if AuthFailed(err) && ctx.Err() == nil {
		err = s.ping(ctx)
	}
	return err
}

func (s *Sink) ping(ctx context.Context) error {
	if s.sasl != nil {
		s.sasl.take()
	}
	err := s.cl.Ping(ctx)
	if err == nil || s.sasl == nil || SASLFailed(err) {
		return err
	}
	if f := s.sasl.take(); f != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (%s, broker %s: %v)", ErrSASLClosed, s.saslName, f.addr, f.err)
	}
	return err
}

// AuthFailed reports whether err says that the brokers refuse the client
// for its TLS or SASL configuration ([TLSFailed], [SASLFailed]). Retrying
// does not help until the configuration changes. A new connection closed
// at once (franz-go's [kgo.ErrFirstReadEOF]) is not counted: a broker does
// that to a client without the TLS or SASL it expects, but so does a load
// balancer whose brokers are down, which retrying does cure.
func AuthFailed(err error) bool {
	return TLSFailed(err) || SASLFailed(err)
}

// TLSFailed reports whether err is a TLS handshake that failed for its
// configuration: the broker's certificate does not verify (unknown
// authority, another host name, expired), the broker refused the handshake
// (a TLS alert, such as a client certificate required or refused), the
// broker does not speak TLS, or the client does not where the broker does.
func TLSFailed(err error) bool {
	if err == nil {
		return false
	}
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		op       *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &header):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		return true // an alert from the broker (crypto/tls's alert type is not exported)
	case strings.Contains(err.Error(), plaintextToTLS):
		return true
	}
	return false
}

// plaintextToTLS is in franz-go's error (of no type of its own) for a TLS
// alert read as the size of a Kafka response: a TLS listener's answer to a
// client that does not speak TLS.
const plaintextToTLS = "plaintext connection speaking to a tls endpoint"

// SASLFailed reports whether err says that SASL authentication failed:
// the broker refused the credentials or the mechanism, or closed the
// connection during authentication ([ErrSASLClosed]).
func SASLFailed(err error) bool {
	if errors.Is(err, ErrSASLClosed) {
		return true
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState:
		return true
	}
	return false
}
