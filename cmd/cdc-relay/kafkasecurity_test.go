package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/testcert"
	"github.com/cdc-relay/cdc-relay/sink"
)

// TestKafkaSecurityFlags builds the TLS configuration and the SASL
// mechanism from flags, the environment and files, and checks that no
// error and no log line holds the password.
func TestKafkaSecurityFlags(t *testing.T) {
	const password = "pa ss-w0rd " // spaces are the password's own
	dir := t.TempDir()
	write := func(name, content string, perm os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, err := testcert.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("relay")
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.Client("other")
	if err != nil {
		t.Fatal(err)
	}
	caFile := write("ca.pem", string(ca.CertPEM), 0o644)
	certFile, keyFile, err := client.WriteFiles(dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	otherKey := write("other.key", string(other.KeyPEM), 0o600)
	notPEM := write("not.pem", "hello\n", 0o644)
	pwFile := write("password", password+"\n", 0o600)
	pwFileCRLF := write("password-crlf", password+"\r\n", 0o600)
	pwFileNoNewline := write("password-bare", password, 0o600)
	emptyFile := write("empty", "\n", 0o600)
	unreadable := filepath.Join(dir, "a-directory") // unreadable as a file, even by root
	if err := os.Mkdir(unreadable, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nosuch")

	pg := []string{"--postgres-url", "postgres://x@h/db", "--kafka-brokers", "k:9092"}
	type want struct {
		err        string // "" for no error
		tls        bool
		caPool     bool
		clientCert bool
		serverName string
		sasl       string // the mechanism's name, "" for none
		plainAuth  string // PLAIN's first message, which holds the password
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want want
	}{
		{name: "plaintext", want: want{}},
		{name: "--kafka-tls alone: the system's roots", args: []string{"--kafka-tls"}, want: want{tls: true}},
		{name: "a CA file implies TLS", args: []string{"--kafka-tls-ca-file", caFile}, want: want{tls: true, caPool: true}},
		{name: "from the environment", env: map[string]string{"CDC_RELAY_KAFKA_TLS_CA_FILE": caFile, "CDC_RELAY_KAFKA_TLS_SERVER_NAME": "kafka.internal"},
			want: want{tls: true, caPool: true, serverName: "kafka.internal"}},
		{name: "mTLS", args: []string{"--kafka-tls-ca-file", caFile, "--kafka-tls-cert-file", certFile, "--kafka-tls-key-file", keyFile},
			want: want{tls: true, caPool: true, clientCert: true}},
		{name: "a server name implies TLS", args: []string{"--kafka-tls-server-name", "kafka.internal"}, want: want{tls: true, serverName: "kafka.internal"}},
		{name: "missing CA file", args: []string{"--kafka-tls-ca-file", missing},
			want: want{err: "--kafka-tls-ca-file: open " + missing + ": no such file or directory"}},
		{name: "CA file without a certificate", args: []string{"--kafka-tls-ca-file", notPEM},
			want: want{err: fmt.Sprintf("--kafka-tls-ca-file %q holds no PEM certificate", notPEM)}},
		{name: "cert without key", args: []string{"--kafka-tls-cert-file", certFile}, want: want{err: "--kafka-tls-cert-file needs --kafka-tls-key-file"}},
		{name: "key without cert", args: []string{"--kafka-tls-key-file", keyFile}, want: want{err: "--kafka-tls-key-file needs --kafka-tls-cert-file"}},
		{name: "missing key file", args: []string{"--kafka-tls-cert-file", certFile, "--kafka-tls-key-file", missing},
			want: want{err: "--kafka-tls-key-file: stat " + missing}},
		{name: "key of another certificate", args: []string{"--kafka-tls-cert-file", certFile, "--kafka-tls-key-file", otherKey},
			want: want{err: "private key does not match public key"}},

		{name: "SCRAM, password in the environment", args: []string{"--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", "relay"},
			env: map[string]string{kafkaSASLPasswordEnv: password}, want: want{sasl: "SCRAM-SHA-512"}},
		{name: "SCRAM-SHA-256 over TLS, all from the environment", env: map[string]string{
			"CDC_RELAY_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256", "CDC_RELAY_KAFKA_SASL_USER": "relay", kafkaSASLPasswordEnv: password,
			"CDC_RELAY_KAFKA_TLS": "true"}, want: want{sasl: "SCRAM-SHA-256", tls: true}},
		{name: "PLAIN, password in the environment", args: []string{"--kafka-sasl-mechanism", "Plain", "--kafka-sasl-user", "relay"},
			env: map[string]string{kafkaSASLPasswordEnv: password}, want: want{sasl: "PLAIN", plainAuth: "\x00relay\x00" + password}},
		{name: "password file: one newline dropped", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", pwFile},
			want: want{sasl: "PLAIN", plainAuth: "\x00relay\x00" + password}},
		{name: "password file with CRLF", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", pwFileCRLF},
			want: want{sasl: "PLAIN", plainAuth: "\x00relay\x00" + password}},
		{name: "password file without a newline", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay"},
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD_FILE": pwFileNoNewline}, want: want{sasl: "PLAIN", plainAuth: "\x00relay\x00" + password}},
		{name: "unknown mechanism", args: []string{"--kafka-sasl-mechanism", "SCRAM-SHA-1", "--kafka-sasl-user", "relay"},
			env: map[string]string{kafkaSASLPasswordEnv: password}, want: want{err: `--kafka-sasl-mechanism "SCRAM-SHA-1": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`}},
		{name: "mechanism without user", args: []string{"--kafka-sasl-mechanism", "SCRAM-SHA-512"},
			env: map[string]string{kafkaSASLPasswordEnv: password}, want: want{err: "--kafka-sasl-mechanism SCRAM-SHA-512 needs --kafka-sasl-user"}},
		{name: "mechanism without password", args: []string{"--kafka-sasl-mechanism", "SCRAM-SHA-512", "--kafka-sasl-user", "relay"},
			want: want{err: "--kafka-sasl-mechanism SCRAM-SHA-512 needs a password: set " + kafkaSASLPasswordEnv + ", or --kafka-sasl-password-file"}},
		{name: "user without mechanism", args: []string{"--kafka-sasl-user", "relay"},
			want: want{err: "--kafka-sasl-user is set but --kafka-sasl-mechanism is not"}},
		{name: "password without mechanism", env: map[string]string{kafkaSASLPasswordEnv: password},
			want: want{err: kafkaSASLPasswordEnv + " is set but --kafka-sasl-mechanism is not"}},
		{name: "password file without mechanism", args: []string{"--kafka-sasl-password-file", pwFile},
			want: want{err: "--kafka-sasl-password-file is set but --kafka-sasl-mechanism is not"}},
		{name: "two password sources", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", pwFile},
			env: map[string]string{kafkaSASLPasswordEnv: password}, want: want{err: "both " + kafkaSASLPasswordEnv + " and --kafka-sasl-password-file are set"}},
		{name: "missing password file", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", missing},
			want: want{err: "--kafka-sasl-password-file: open " + missing + ": no such file or directory"}},
		{name: "empty password file", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", emptyFile},
			want: want{err: fmt.Sprintf("--kafka-sasl-password-file %q is empty", emptyFile)}},
		{name: "unreadable password file", args: []string{"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", unreadable},
			want: want{err: "--kafka-sasl-password-file: read " + unreadable + ": is a directory"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c := &RunCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
			fs := c.flags()
			err := parseFlags(fs, append(append([]string{}, pg...), tt.args...))
			if err == nil {
				err = c.finish(fs)
			}
			if err != nil {
				if strings.Contains(err.Error(), strings.TrimSpace(password)) {
					t.Errorf("the error shows the password: %v", err)
				}
				if !errors.As(err, new(usageError)) {
					t.Errorf("%v is not a usage error", err)
				}
			}
			switch {
			case tt.want.err != "" && err == nil:
				t.Fatalf("no error, want %q", tt.want.err)
			case tt.want.err != "":
				if !strings.Contains(err.Error(), tt.want.err) {
					t.Errorf("error %q, want it to contain %q", err, tt.want.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			k := c.cfg.Kafka
			if got := k.TLS != nil; got != tt.want.tls {
				t.Fatalf("TLS %v, want %v", got, tt.want.tls)
			}
			if k.TLS != nil {
				if got := k.TLS.RootCAs != nil; got != tt.want.caPool {
					t.Errorf("own CA pool %v, want %v", got, tt.want.caPool)
				}
				if got := len(k.TLS.Certificates) == 1; got != tt.want.clientCert {
					t.Errorf("client certificate %v, want %v", got, tt.want.clientCert)
				}
				if k.TLS.ServerName != tt.want.serverName {
					t.Errorf("server name %q, want %q", k.TLS.ServerName, tt.want.serverName)
				}
				if k.TLS.MinVersion < tls.VersionTLS12 {
					t.Errorf("TLS minimum version %x, want at least 1.2", k.TLS.MinVersion)
				}
			}
			switch {
			case k.SASL == nil && tt.want.sasl != "":
				t.Fatalf("no SASL, want %s", tt.want.sasl)
			case k.SASL != nil && k.SASL.Name() != tt.want.sasl:
				t.Fatalf("SASL %s, want %q", k.SASL.Name(), tt.want.sasl)
			}
			if tt.want.plainAuth != "" {
				_, first, err := k.SASL.Authenticate(context.Background(), "k:9092")
				if err != nil {
					t.Fatal(err)
				}
				if string(first) != tt.want.plainAuth {
					t.Errorf("PLAIN sends %q, want %q", first, tt.want.plainAuth)
				}
			}
			var log bytes.Buffer
			c.kafkaSecurity.logSettings(slog.New(slog.NewTextHandler(&log, nil)))
			if strings.Contains(log.String(), strings.TrimSpace(password)) {
				t.Errorf("the log shows the password:\n%s", log.String())
			}
			if got := strings.Contains(log.String(), "SASL PLAIN without TLS"); got != (tt.want.sasl == "PLAIN" && !tt.want.tls) {
				t.Errorf("warning of PLAIN without TLS: %v; log:\n%s", got, log.String())
			}
		})
	}
}

// TestKafkaSecurityExplain: an error that says the brokers refuse the
// relay's TLS or SASL configuration names the flags to check; others pass
// unchanged.
func TestKafkaSecurityExplain(t *testing.T) {
	scramEnv := kafkaSecurityFlags{mechanism: "SCRAM-SHA-512", user: "relay", passwordSource: "from " + kafkaSASLPasswordEnv}
	withCA := kafkaSecurityFlags{tls: true, caFile: "/etc/kafka/ca.pem"}
	verify := func(err error) error {
		return fmt.Errorf("unable to dial: TLS handshake with k:9093: %w", &tls.CertificateVerificationError{Err: err})
	}
	remote := &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}
	for _, tt := range []struct {
		name  string
		flags kafkaSecurityFlags
		err   error
		hint  string // "" for the error unchanged
	}{
		{"nil", scramEnv, nil, ""},
		{"another error", scramEnv, errors.New("connect to PostgreSQL: refused"), ""},
		{"SASL refused", scramEnv, fmt.Errorf("Kafka refuses the relay's connection: %w", kerr.SaslAuthenticationFailed),
			`check --kafka-sasl-user "relay" and its password (from CDC_RELAY_KAFKA_SASL_PASSWORD), and that the brokers' listener enables SCRAM-SHA-512`},
		{"SASL connection closed", scramEnv, fmt.Errorf("%w (SCRAM-SHA-512, broker k:9092: EOF)", sink.ErrSASLClosed), `--kafka-sasl-user "relay"`},
		{"SASL expected", kafkaSecurityFlags{}, kerr.IllegalSaslState, "the brokers expect SASL: set --kafka-sasl-mechanism"},
		{"unknown CA, system roots", kafkaSecurityFlags{tls: true}, verify(x509UnknownAuthority()), "name its CA in --kafka-tls-ca-file"},
		{"unknown CA, own file", withCA, verify(x509UnknownAuthority()), "not signed by a CA in --kafka-tls-ca-file /etc/kafka/ca.pem"},
		{"host name", withCA, verify(x509Hostname()), "--kafka-tls-server-name"},
		{"client certificate required", withCA, remote, "pass --kafka-tls-cert-file and --kafka-tls-key-file"},
		{"client certificate refused", kafkaSecurityFlags{tls: true, certFile: "/etc/relay.crt"}, remote, "trusts the CA of --kafka-tls-cert-file /etc/relay.crt"},
		{"TLS to a plaintext listener", withCA, &kgo.ErrFirstReadEOF{}, "leave out --kafka-tls"},
		{"plaintext to a TLS listener", kafkaSecurityFlags{}, &kgo.ErrFirstReadEOF{}, "add --kafka-tls"},
		{"plaintext to a TLS listener that answers with an alert", kafkaSecurityFlags{},
			errors.New("invalid large response size 352518912 > limit 104857600; the first three bytes received appear to be a tls alert record for TLS v1.2; " +
				"is this a plaintext connection speaking to a tls endpoint?"), "add --kafka-tls"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.flags.explain(tt.err)
			if tt.hint == "" {
				if got != tt.err {
					t.Errorf("explain(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("explain(%v) = %v, which does not wrap it", tt.err, got)
			}
			if !strings.Contains(got.Error(), tt.hint) {
				t.Errorf("explain(%v) = %q, want it to contain %q", tt.err, got, tt.hint)
			}
		})
	}
}

func x509UnknownAuthority() error { return x509.UnknownAuthorityError{} }

func x509Hostname() error {
	return x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"kafka-1"}}, Host: "10.0.0.5"}
}
