package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/cdc-relay/cdc-relay/sink"
)

// kafkaSASLPasswordEnv holds the SASL password. There is no flag for it: a
// value on the command line shows in ps to every user of the machine.
const kafkaSASLPasswordEnv = "CDC_RELAY_KAFKA_SASL_PASSWORD"

// kafkaSecurityFlagNames are the flags of kafkaSecurityFlags, in the order
// a usage lists them.
var kafkaSecurityFlagNames = []string{
	"kafka-tls", "kafka-tls-ca-file", "kafka-tls-cert-file", "kafka-tls-key-file", "kafka-tls-server-name",
	"kafka-sasl-mechanism", "kafka-sasl-user", "kafka-sasl-password-file",
}

// saslMechanisms are the SASL mechanisms the relay speaks, by the name
// --kafka-sasl-mechanism takes, in upper case.
var saslMechanisms = map[string]func(user, pass string) sasl.Mechanism{
	"PLAIN":         func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() },
	"SCRAM-SHA-256": func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha256Mechanism() },
	"SCRAM-SHA-512": func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha512Mechanism() },
}

const saslMechanismList = "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"

// kafkaSecurityFlags are the flags of the connections to Kafka: TLS and
// SASL. Every command that talks to Kafka registers them.
type kafkaSecurityFlags struct {
	tls                                   bool
	caFile, certFile, keyFile, serverName string
	mechanism, user, passwordFile         string

	// passwordSource says where the password came from, for errors and
	// logs; never the password.
	passwordSource string
}

func (k *kafkaSecurityFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&k.tls, "kafka-tls", false,
		"connect to the brokers with TLS, verifying their certificates (implied by any --kafka-tls-* flag)")
	fs.StringVar(&k.caFile, "kafka-tls-ca-file", "",
		"the CA certificates (a PEM `file`) that sign the brokers' certificates; default: the system's roots")
	fs.StringVar(&k.certFile, "kafka-tls-cert-file", "",
		"the client certificate (a PEM `file`, followed by its intermediates), for brokers that require one (mTLS); needs --kafka-tls-key-file")
	fs.StringVar(&k.keyFile, "kafka-tls-key-file", "",
		"the private key (a PEM `file`) of --kafka-tls-cert-file; keep it readable by the relay only")
	fs.StringVar(&k.serverName, "kafka-tls-server-name", "",
		"the `name` the brokers' certificates must be valid for; default: the host of each broker address")
	fs.StringVar(&k.mechanism, "kafka-sasl-mechanism", "",
		"authenticate with SASL `mechanism` "+saslMechanismList+" as --kafka-sasl-user, with the password in "+
			kafkaSASLPasswordEnv+" or --kafka-sasl-password-file; PLAIN sends the password as it is: use it with --kafka-tls")
	fs.StringVar(&k.user, "kafka-sasl-user", "", "the SASL `user` name")
	fs.StringVar(&k.passwordFile, "kafka-sasl-password-file", "",
		"read the SASL password from this `file` (one trailing newline dropped) instead of the environment variable "+
			kafkaSASLPasswordEnv+"; there is no flag for the password itself, as ps would show it to every user")
}

// finish sets cfg.TLS and cfg.SASL from the flags and the password's
// source. Its errors name the flag at fault and never hold the password.
func (k *kafkaSecurityFlags) finish(cfg *sink.Config) error {
	tlsCfg, err := k.tlsConfig()
	if err != nil {
		return err
	}
	mech, err := k.saslMechanism()
	if err != nil {
		return err
	}
	cfg.TLS, cfg.SASL = tlsCfg, mech
	return nil
}

// tlsConfig builds the TLS configuration, or nil without TLS.
func (k *kafkaSecurityFlags) tlsConfig() (*tls.Config, error) {
	if !k.tls && k.caFile == "" && k.certFile == "" && k.keyFile == "" && k.serverName == "" {
		return nil, nil
	}
	k.tls = true
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.serverName}
	if k.caFile != "" {
		pem, err := os.ReadFile(k.caFile)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--kafka-tls-ca-file: %v", err)}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usageError{fmt.Sprintf("--kafka-tls-ca-file %q holds no PEM certificate (-----BEGIN CERTIFICATE-----)", k.caFile)}
		}
	}
	switch {
	case k.certFile != "" && k.keyFile == "":
		return nil, usageError{"--kafka-tls-cert-file needs --kafka-tls-key-file: a client certificate goes with its private key"}
	case k.keyFile != "" && k.certFile == "":
		return nil, usageError{"--kafka-tls-key-file needs --kafka-tls-cert-file: a private key goes with its client certificate"}
	case k.certFile != "":
		for _, f := range []struct{ flag, path string }{{"cert", k.certFile}, {"key", k.keyFile}} {
			if _, err := os.Stat(f.path); err != nil {
				return nil, usageError{fmt.Sprintf("--kafka-tls-%s-file: %v", f.flag, err)}
			}
		}
		cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--kafka-tls-cert-file %q and --kafka-tls-key-file %q: %v", k.certFile, k.keyFile, err)}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// saslMechanism builds the SASL mechanism, or nil without SASL.
func (k *kafkaSecurityFlags) saslMechanism() (sasl.Mechanism, error) {
	envPassword := os.Getenv(kafkaSASLPasswordEnv)
	if k.mechanism == "" {
		switch {
		case k.user != "":
			return nil, usageError{"--kafka-sasl-user is set but --kafka-sasl-mechanism is not: name the mechanism, " + saslMechanismList}
		case k.passwordFile != "":
			return nil, usageError{"--kafka-sasl-password-file is set but --kafka-sasl-mechanism is not: name the mechanism, " + saslMechanismList}
		case envPassword != "":
			return nil, usageError{kafkaSASLPasswordEnv + " is set but --kafka-sasl-mechanism is not: name the mechanism, " + saslMechanismList}
		}
		return nil, nil
	}
	name := strings.ToUpper(strings.TrimSpace(k.mechanism))
	newMechanism, ok := saslMechanisms[name]
	if !ok {
		return nil, usageError{fmt.Sprintf("--kafka-sasl-mechanism %q: want %s", k.mechanism, saslMechanismList)}
	}
	k.mechanism = name
	if k.user == "" {
		return nil, usageError{fmt.Sprintf("--kafka-sasl-mechanism %s needs --kafka-sasl-user (or CDC_RELAY_KAFKA_SASL_USER)", name)}
	}
	var password string
	switch {
	case envPassword != "" && k.passwordFile != "":
		return nil, usageError{"both " + kafkaSASLPasswordEnv + " and --kafka-sasl-password-file are set: set one"}
	case envPassword != "":
		password, k.passwordSource = envPassword, "from "+kafkaSASLPasswordEnv
	case k.passwordFile != "":
		b, err := os.ReadFile(k.passwordFile)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--kafka-sasl-password-file: %v", err)}
		}
		password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if password == "" {
			return nil, usageError{fmt.Sprintf("--kafka-sasl-password-file %q is empty: it must hold the SASL password", k.passwordFile)}
		}
		k.passwordSource = fmt.Sprintf("from --kafka-sasl-password-file %s", k.passwordFile)
	default:
		return nil, usageError{fmt.Sprintf("--kafka-sasl-mechanism %s needs a password: set %s, or --kafka-sasl-password-file naming a file that holds it",
			name, kafkaSASLPasswordEnv)}
	}
	return newMechanism(k.user, password), nil
}

// logSettings says how the relay connects to Kafka when it is not plaintext
// without SASL, and warns of a SASL PLAIN password sent in clear.
func (k *kafkaSecurityFlags) logSettings(log *slog.Logger) {
	if !k.tls && k.mechanism == "" {
		return
	}
	var attrs []any
	if k.tls {
		ca := k.caFile
		if ca == "" {
			ca = "the system's roots"
		}
		attrs = append(attrs, "tls", true, "ca", ca)
		if k.certFile != "" {
			attrs = append(attrs, "client_cert", k.certFile)
		}
	}
	if k.mechanism != "" {
		attrs = append(attrs, "sasl", k.mechanism, "user", k.user, "password", k.passwordSource)
	}
	log.Info("Kafka security", attrs...)
	if k.mechanism == "PLAIN" && !k.tls {
		log.Warn("SASL PLAIN without TLS: the password crosses the network in clear; add --kafka-tls if the brokers' listener is SASL_SSL")
	}
}

// explain adds to an error that says the brokers refuse the relay's TLS or
// SASL configuration which flags to check.
func (k *kafkaSecurityFlags) explain(err error) error {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		op       *net.OpError
		eof      *kgo.ErrFirstReadEOF
		hint     string
	)
	switch {
	case err == nil:
		return nil
	case sink.SASLFailed(err) && k.mechanism == "":
		hint = "the brokers expect SASL: set --kafka-sasl-mechanism, --kafka-sasl-user and the password"
	case sink.SASLFailed(err):
		hint = fmt.Sprintf("check --kafka-sasl-user %q and its password (%s), and that the brokers' listener enables %s",
			k.user, k.passwordSource, k.mechanism)
	case errors.As(err, &unknown) && k.caFile == "":
		hint = "the broker's certificate is not signed by a CA the system trusts: name its CA in --kafka-tls-ca-file"
	case errors.As(err, &unknown):
		hint = fmt.Sprintf("the broker's certificate is not signed by a CA in --kafka-tls-ca-file %s: name the CA that signed it", k.caFile)
	case errors.As(err, &hostname):
		hint = "the broker's certificate is not valid for the name the relay checked: reach the brokers by a name it is valid for " +
			"(in --kafka-brokers, and the brokers' advertised.listeners), or set --kafka-tls-server-name"
	case errors.As(err, &op) && op.Op == "remote error" && k.certFile == "":
		hint = "the broker refused the TLS handshake: if it requires a client certificate, pass --kafka-tls-cert-file and --kafka-tls-key-file"
	case errors.As(err, &op) && op.Op == "remote error":
		hint = fmt.Sprintf("the broker refused the TLS handshake: check that it trusts the CA of --kafka-tls-cert-file %s", k.certFile)
	case sink.TLSFailed(err) && !k.tls:
		hint = "the brokers' listener speaks TLS: add --kafka-tls (and --kafka-tls-ca-file if a private CA signs its certificate)"
	case sink.TLSFailed(err):
		hint = "check --kafka-tls-ca-file and that the brokers' listener speaks TLS (SSL or SASL_SSL)"
	case errors.As(err, &eof) && k.tls:
		hint = "if the brokers' listener is PLAINTEXT or SASL_PLAINTEXT, leave out --kafka-tls; if it is SASL_SSL, set --kafka-sasl-mechanism"
	case errors.As(err, &eof):
		hint = "if the brokers' listener is SSL or SASL_SSL, add --kafka-tls; if it is SASL_PLAINTEXT or SASL_SSL, set --kafka-sasl-mechanism"
	default:
		return err
	}
	return fmt.Errorf("%w; %s", err, hint)
}
