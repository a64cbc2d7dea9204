package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// refuseWebhooksExactlyOnce refuses exactly-once delivery of a config file
// that routes events to a webhook publisher: a webhook receiver takes no
// part in a Kafka transaction, so its deliveries are at least once.
func refuseWebhooksExactlyOnce(f *config.File, path string) error {
	if f == nil {
		return nil
	}
	uses := f.WebhookUses()
	if len(uses) == 0 {
		return nil
	}
	return usageError{fmt.Sprintf("--delivery exactly-once: %s routes events to webhook publishers (%s), and webhooks are at-least-once only: "+
		"a webhook receiver takes no part in a Kafka transaction; use at-least-once delivery (leave --delivery out), "+
		"or route those events to kafka alone", path, places(uses))}
}

// places names where uses are, each place once: "tables[0].routes[0]
// (public.events, line 13: partner) and tables[1] (public.outbox, line
// 18: partner)".
func places(uses []config.PublisherUse) string {
	var out []string
	for i := 0; i < len(uses); {
		u := uses[i]
		var names []string
		for ; i < len(uses) && uses[i].Where == u.Where; i++ {
			names = append(names, uses[i].Publisher)
		}
		p := fmt.Sprintf("%s (line %d: %s)", u.Where, u.Line, strings.Join(names, ", "))
		if u.Table != "" {
			p = fmt.Sprintf("%s (%s, line %d: %s)", u.Where, u.Table, u.Line, strings.Join(names, ", "))
		}
		out = append(out, p)
	}
	if len(out) == 1 {
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// checkPublishers checks each publisher of f as check-config does
// (check: webhook.Config.Check, which reads the secret and the TLS files
// and resolves the URL's host, sending nothing) and prints its block:
// "ok" or each problem, its settings, the places that route events to
// it. It returns the number of problems.
func checkPublishers(ctx context.Context, w io.Writer, f *config.File, check func(context.Context, webhook.Config) error) int {
	n := 0
	for _, pub := range f.Publishers {
		if pub.Webhook == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		problems := keyProblems(check(cctx, *pub.Webhook), "publishers."+pub.Name+".webhook.")
		cancel()
		n += len(problems)
		fmt.Fprintln(w)
		if len(problems) == 0 {
			fmt.Fprintf(w, "publisher %s: ok\n", pub.Name)
		} else {
			fmt.Fprintf(w, "publisher %s: %s\n", pub.Name, plural(len(problems), "problem"))
			for _, p := range problems {
				fmt.Fprintf(w, "  %s\n", p)
			}
		}
		fmt.Fprintf(w, "  %s\n", webhookText(*pub.Webhook))
		var uses []config.PublisherUse
		for _, u := range f.PublisherUses {
			if u.Publisher == pub.Name {
				uses = append(uses, u)
			}
		}
		if len(uses) == 0 {
			fmt.Fprintf(w, "  no table or route sends events to it\n")
			continue
		}
		fmt.Fprintf(w, "  the events of %s\n", places(uses))
		fmt.Fprintf(w, "  note: backfill publishes to Kafka only: it refuses a file that sends events to a webhook\n")
	}
	return n
}

// keyProblems are err's problems (webhook.KeyError's, errors.Join'ed),
// each "prefix" + key + ": " + problem.
func keyProblems(err error, prefix string) []string {
	if err == nil {
		return nil
	}
	errs := []error{err}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	var out []string
	for _, e := range errs {
		var ke *webhook.KeyError
		if errors.As(e, &ke) {
			out = append(out, prefix+ke.Key+": "+ke.Problem)
		} else {
			out = append(out, strings.TrimSuffix(prefix, ".")+": "+e.Error())
		}
	}
	return out
}

// webhookText says in words how a webhook publisher sends: "webhook
// POST https://partner.example/hooks, timeout 10s, one event a request,
// signed with the secret in /etc/cdc-relay/partner-secret".
func webhookText(c webhook.Config) string {
	method, timeout := c.Method, c.Timeout
	if method == "" {
		method = webhook.DefaultMethod
	}
	if timeout == 0 {
		timeout = webhook.DefaultTimeout
	}
	batch := "one event a request"
	if c.BatchSize > 1 {
		batch = fmt.Sprintf("up to %d events a request, as a JSON array", c.BatchSize)
	}
	secret := "the secret in " + c.SecretFile
	if c.SecretEnv != "" {
		secret = "the secret in $" + c.SecretEnv
	}
	return fmt.Sprintf("webhook %s %s, timeout %s, %s, signed with %s", method, webhook.ShowURL(c.URL), formatDuration(timeout), batch, secret)
}

// checkWebhook is check-config's check of a webhook publisher.
func checkWebhook(ctx context.Context, c webhook.Config) error { return c.Check(ctx) }
