package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/testcert"
)

// tlsFixture is a CA, a receiver's certificate for 127.0.0.1 and
// receiver.test, a client certificate, and another CA, all in files.
type tlsFixture struct {
	ca                    *testcert.CA
	caFile, otherCAFile   string
	server                tls.Certificate
	clientCert, clientKey string
}

func newTLSFixture(t *testing.T) tlsFixture {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("webhook test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	f := tlsFixture{ca: ca, caFile: filepath.Join(dir, "ca.pem"), otherCAFile: filepath.Join(dir, "other.pem")}
	for path, pem := range map[string][]byte{f.caFile: ca.CertPEM, f.otherCAFile: other.CertPEM} {
		if err := os.WriteFile(path, pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := ca.Server("127.0.0.1", "receiver.test")
	if err != nil {
		t.Fatal(err)
	}
	if f.server, err = srv.TLS(); err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("cdc-relay")
	if err != nil {
		t.Fatal(err)
	}
	if f.clientCert, f.clientKey, err = client.WriteFiles(dir, "client"); err != nil {
		t.Fatal(err)
	}
	return f
}

// receiver starts an HTTPS receiver with the fixture's certificate,
// requiring a client certificate the CA signed when mTLS.
func (f tlsFixture) receiver(t *testing.T, mTLS bool) *httptest.Server {
	t.Helper()
	v := newVerifier(t, testSecret)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := v.verify(r.Header, body, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{f.server}}
	if mTLS {
		srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, f.ca.Pool()
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes the tests make
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestSendTLS(t *testing.T) {
	f := newTLSFixture(t)
	for _, tc := range []struct {
		name    string
		mTLS    bool
		tls     TLS
		want    Outcome
		wantErr string // in Err
		as      any    // what errors.As finds in Err
	}{
		{name: "the CA", tls: TLS{CAFile: f.caFile}, want: Delivered},
		{name: "server name", tls: TLS{CAFile: f.caFile, ServerName: "receiver.test"}, want: Delivered},
		{name: "another server name", tls: TLS{CAFile: f.caFile, ServerName: "elsewhere.test"}, want: Retry,
			wantErr: "not elsewhere.test (reach the receiver by a name its certificate is valid for, or set tls.server_name", as: new(x509.HostnameError)},
		{name: "another CA", tls: TLS{CAFile: f.otherCAFile}, want: Retry,
			wantErr: "certificate signed by unknown authority (name the CA that signs the receiver's certificate in tls.ca_file)",
			as:      new(x509.UnknownAuthorityError)},
		{name: "the system's roots", want: Retry, wantErr: "unknown authority (name the CA", as: new(*tls.CertificateVerificationError)},
		{name: "client certificate", mTLS: true, tls: TLS{CAFile: f.caFile, CertFile: f.clientCert, KeyFile: f.clientKey}, want: Delivered},
		{name: "client certificate missing", mTLS: true, tls: TLS{CAFile: f.caFile}, want: Retry,
			wantErr: "certificate required (the receiver refused the TLS handshake: if it requires a client certificate, set tls.cert_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := f.receiver(t, tc.mTLS)
			cfg := testConfig(srv.URL + "/hooks")
			cfg.TLS = tc.tls
			r := newSender(t, cfg).Send(context.Background(), []Message{{ID: "1", Payload: []byte(`{"n":1}`)}})
			if r.Outcome != tc.want {
				t.Fatalf("outcome %s (status %d, err %v), want %s", r.Outcome, r.Status, r.Err, tc.want)
			}
			if tc.want == Delivered {
				if r.Status != http.StatusOK {
					t.Errorf("status %d: the receiver did not verify the request", r.Status)
				}
				return
			}
			if r.Status != 0 || !strings.Contains(r.Err.Error(), tc.wantErr) {
				t.Errorf("status %d, err %q; want no status and %q", r.Status, r.Err, tc.wantErr)
			}
			if tc.as != nil && !errors.As(r.Err, tc.as) {
				t.Errorf("err %v: errors.As finds no %T", r.Err, tc.as)
			}
		})
	}
}

// TestNewReadsTheTLSFiles checks that New fails on TLS files it cannot
// use, naming the key.
func TestNewReadsTheTLSFiles(t *testing.T) {
	f := newTLSFixture(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		tls  TLS
		want string
	}{
		{TLS{CAFile: "/nonexistent/ca.pem"}, "tls.ca_file: open /nonexistent/ca.pem"},
		{TLS{CAFile: garbage}, "tls.ca_file: " + garbage + " holds no PEM certificate"},
		{TLS{CertFile: f.clientCert, KeyFile: garbage}, "tls.cert_file: " + f.clientCert + " and tls.key_file " + garbage},
		{TLS{CertFile: f.clientKey, KeyFile: f.clientCert}, "tls.cert_file: "},
	} {
		cfg := testConfig("https://127.0.0.1:1/hooks")
		cfg.TLS = tc.tls
		_, err := New(cfg, mustSecret(t, testSecret), 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TLS %+v: err %v, want %q", tc.tls, err, tc.want)
		}
	}
}
