package lanes

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/webhook"
)

// Webhook returns s as the Sender of a webhook publisher's lanes: each
// record is one event, its "id" header the event's id (webhook-id), its
// value the payload, its timestamp the event's time and its headers the
// mapped headers; the receiver's answer becomes an Answer: Delivered is
// taken, Retry may be taken later (with its Retry-After), Refused is a
// refusal of the records; its Class and Latency are the Result's.
func Webhook(s *webhook.Sender) Sender { return webhookSender{s} }

type webhookSender struct{ s *webhook.Sender }

// Send sends recs in one request of s.
func (w webhookSender) Send(ctx context.Context, recs []*kgo.Record) Answer {
	msgs := make([]webhook.Message, len(recs))
	for i, r := range recs {
		msgs[i] = message(r)
	}
	res := w.s.Send(ctx, msgs)
	a := Answer{Class: res.Class(), Latency: res.Latency}
	switch res.Outcome {
	case webhook.Delivered:
	case webhook.Retry:
		a.Err, a.Retry, a.RetryAfter = res.Err, true, res.RetryAfter
	default:
		a.Err = res.Err
	}
	return a
}

// message is r as the webhook's event.
func message(r *kgo.Record) webhook.Message {
	m := webhook.Message{Payload: r.Value, Time: r.Timestamp, Headers: make([]webhook.Header, 0, len(r.Headers))}
	for _, h := range r.Headers {
		if h.Key == "id" && m.ID == "" {
			m.ID = string(h.Value)
		}
		m.Headers = append(m.Headers, webhook.Header{Key: h.Key, Value: h.Value})
	}
	return m
}
