package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// Check is check-config's: [Config.Validate], then what needs I/O and
// sends nothing: it reads and parses the secret, reads the CA file and the
// client key pair, and resolves the URL's host (the proxy's, when the
// environment names one for the URL). It returns every problem found,
// each a [*KeyError], or nil.
func (c Config) Check(ctx context.Context) error {
	return c.check(ctx, net.DefaultResolver, http.ProxyFromEnvironment)
}

// proxyFunc is an http.Transport's Proxy.
type proxyFunc = func(*http.Request) (*url.URL, error)

func (c Config) check(ctx context.Context, r *net.Resolver, proxy proxyFunc) error {
	if err := c.Validate(); err != nil {
		return err
	}
	var errs []error
	if _, err := c.ReadSecret(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.tlsConfig(); err != nil {
		errs = append(errs, err)
	}
	if err := c.resolve(ctx, r, proxy); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// resolve looks the URL's host up, or the proxy's that the environment
// names for it.
func (c Config) resolve(ctx context.Context, r *net.Resolver, proxyFor proxyFunc) error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return &KeyError{Key: "url", Problem: "cannot be read as a URL"}
	}
	host, what := u.Hostname(), "the receiver's host"
	proxy, err := proxyFor(&http.Request{URL: u})
	if err != nil {
		// Not err: it quotes the proxy's address, password and all.
		return &KeyError{Key: "url", Problem: fmt.Sprintf(
			"the proxy that HTTPS_PROXY or HTTP_PROXY names for %s is not a URL: fix the variable", showURL(u))}
	}
	if proxy != nil {
		host, what = proxy.Hostname(), "the host of the proxy that HTTPS_PROXY or HTTP_PROXY names for it"
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	if _, err := r.LookupHost(ctx, host); err != nil {
		return &KeyError{Key: "url", Problem: fmt.Sprintf("%s: %s %s does not resolve (%v): check the name, and this machine's DNS",
			showURL(u), what, host, err)}
	}
	return nil
}
