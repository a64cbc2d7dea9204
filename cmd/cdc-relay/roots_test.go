package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rootsHelperEnv, set to 1, makes the test binary verify
// testdata/isrg-root-x1.pem against the system's roots and exit
// (TestMain), instead of running the tests.
const rootsHelperEnv = "CDC_RELAY_TEST_VERIFY_ROOTS"

// verifyAgainstSystemRoots verifies the certificate of the PEM file path,
// a root of Mozilla's list, with no roots given (so the system's, or the
// fallback ones where the system has none), as of a fixed time so that
// its expiry does not matter.
func verifyAgainstSystemRoots(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return fmt.Errorf("%s: no PEM block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	_, err = cert.Verify(x509.VerifyOptions{CurrentTime: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)})
	return err
}

// TestTLSWithoutSystemRoots: where the system has no CA certificates (the
// release's container image has no /etc/ssl/certs), the relay still
// verifies servers against Mozilla's roots, which it embeds
// (golang.org/x/crypto/x509roots/fallback): without them this fails with
// "x509: certificate signed by unknown authority", as TLS to a managed
// PostgreSQL or Kafka would. The roots are read once a process, so a
// process of the test binary of its own checks it, with SSL_CERT_FILE and
// SSL_CERT_DIR naming nothing.
func TestTLSWithoutSystemRoots(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), rootsHelperEnv+"=1",
		"SSL_CERT_FILE=/nonexistent/cert.pem", "SSL_CERT_DIR=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "verified" {
		t.Errorf("verifying ISRG Root X1 without system roots: %v: %s", err, out)
	}
}
