package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/status"
)

// This file is the console's overview and topics pages, and what they
// show with.

// overviewData is the overview page's: the relay's Status as /status
// gives it, and its last hour.
type overviewData struct {
	St        report.Status
	Rate, Ack chart
}

func (c *console) overview(w http.ResponseWriter, req *http.Request) {
	d := overviewData{St: c.s.relay.Status()}
	d.Rate, d.Ack = charts(c.s.relay.History())
	c.render(w, req, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d})
}

// The box of the overview's charts, in SVG units: an hour wide.
const (
	chartWidth, chartHeight = 600, 80
)

// chart is a line of the overview's last hour, drawn in an inline SVG of
// chartWidth by chartHeight: the hour ends at its right edge.
type chart struct {
	// Points are the polyline's; "" when there is nothing to draw.
	Points string
	// Last and Max are the last value and the largest, as text.
	Last, Max string
}

// charts draws the rate and the mean commit-to-ack time of points.
func charts(points []report.Point) (rate, ack chart) {
	if len(points) == 0 {
		return chart{}, chart{}
	}
	end := points[len(points)-1].At
	var rates, acks []float64
	var rateAt, ackAt []time.Time
	for _, p := range points {
		rates, rateAt = append(rates, p.Rate), append(rateAt, p.At)
		if p.Acked > 0 {
			acks, ackAt = append(acks, p.MeanAckSeconds), append(ackAt, p.At)
		}
	}
	perSecond := func(v float64) string { return fmt.Sprintf("%.1f/s", v) }
	return line(end, rateAt, rates, perSecond), line(end, ackAt, acks, ackText)
}

// line is a chart of values at times, the last hour before end.
func line(end time.Time, at []time.Time, values []float64, text func(float64) string) chart {
	if len(values) == 0 {
		return chart{}
	}
	top := slices.Max(values)
	var b strings.Builder
	for i, v := range values {
		x := chartWidth * (1 - end.Sub(at[i]).Seconds()/(report.HistoryInterval*report.HistorySize).Seconds())
		y := float64(chartHeight - 2)
		if top > 0 {
			y -= (chartHeight - 4) * v / top
		}
		if len(values) == 1 { // a line of one point draws nothing: make it a dash
			fmt.Fprintf(&b, "%.1f,%.1f ", max(x-4, 0), y)
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", max(x, 0), y)
	}
	return chart{Points: strings.TrimSpace(b.String()), Last: text(values[len(values)-1]), Max: text(top)}
}

// ackText is a commit-to-ack time: milliseconds under a second.
func ackText(secs float64) string {
	if secs < 1 {
		return fmt.Sprintf("%.0f ms", secs*1000)
	}
	return fmt.Sprintf("%.1f s", secs)
}

// topicRow is one line of the topics page: a publisher's topic that is
// paused or holds events.
type topicRow struct {
	Publisher string
	Topic     string
	Paused    bool
	// Held is the topic's held events, of Kafka's publisher only (Status
	// counts those); nil for another publisher's.
	Held *report.TopicHeld
}

// topicsData is the topics page's.
type topicsData struct {
	Rows []topicRow
	// More says Status listed only the topics with the most held events.
	More int
}

// topicRows are the topics of st that are paused or hold events, Kafka's
// first, each publisher's by name.
func topicRows(st report.Status) []topicRow {
	var rows []topicRow
	for _, t := range st.PausedTopics {
		rows = append(rows, topicRow{Publisher: status.KafkaPublisher, Topic: t, Paused: true})
	}
	for _, p := range st.PublishersPaused {
		rows = append(rows, topicRow{Publisher: p.Publisher, Topic: p.Topic, Paused: true})
	}
	for i := range st.Topics {
		held := &st.Topics[i]
		j := slices.IndexFunc(rows, func(r topicRow) bool { return r.Publisher == status.KafkaPublisher && r.Topic == held.Topic })
		if j < 0 {
			rows = append(rows, topicRow{Publisher: status.KafkaPublisher, Topic: held.Topic})
			j = len(rows) - 1
		}
		rows[j].Held = held
	}
	slices.SortStableFunc(rows, func(a, b topicRow) int {
		if a.Publisher != b.Publisher {
			if a.Publisher == status.KafkaPublisher {
				return -1
			}
			if b.Publisher == status.KafkaPublisher {
				return 1
			}
			return strings.Compare(a.Publisher, b.Publisher)
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	return rows
}

func (c *console) topics(w http.ResponseWriter, req *http.Request) {
	st := c.s.relay.Status()
	d := topicsData{Rows: topicRows(st), More: st.HeldTopics - len(st.Topics)}
	c.render(w, req, http.StatusOK, "topics", page{Title: "Topics", Nav: "topics", Data: d})
}

// pauseTopic is POST /ui/topics/pause and /ui/topics/resume: the API's
// ?topic= (with ?publisher=) from a form.
func (c *console) pauseTopic(w http.ResponseWriter, req *http.Request) {
	action := req.PathValue("action")
	if action != "pause" && action != "resume" {
		http.NotFound(w, req)
		return
	}
	topic, publisher := strings.TrimSpace(req.PostFormValue("topic")), strings.TrimSpace(req.PostFormValue("publisher"))
	back := message{Back: "/ui/topics", BackText: "Topics"}
	if topic == "" {
		back.Heading, back.Text, back.Error = "Nothing "+action+"d", "Name the topic to "+action+".", true
		c.say(w, req, http.StatusBadRequest, back)
		return
	}
	if publisher == "" {
		publisher = status.KafkaPublisher
	}
	changed, err := c.setPaused(req.Context(), publisher, topic, action == "pause")
	if err != nil {
		back.Heading, back.Text, back.Error = "Not "+action+"d", err.Error(), true
		c.say(w, req, errorStatus(err), back)
		return
	}
	verb := action + "d"
	if changed {
		c.log.Info("topic "+verb+" through the console", "topic", topic, "publisher", publisher, "from", req.RemoteAddr)
		back.Heading = fmt.Sprintf("Topic %s %s", topic, verb)
		back.Text = fmt.Sprintf("%s's events of topic %s are %s.", publisher, topic, map[bool]string{true: "held from now on (PAUSED)", false: "delivered again, in order"}[action == "pause"])
	} else {
		back.Heading = fmt.Sprintf("Topic %s was %s already", topic, verb)
		back.Text = "Nothing changed."
	}
	c.say(w, req, http.StatusOK, back)
}

// setPaused pauses or resumes a publisher's topic as the API does:
// Kafka's through the relay, another's through PauseTopicOf.
func (c *console) setPaused(ctx context.Context, publisher, topic string, pause bool) (bool, error) {
	if err := status.ValidPublisher(publisher); err != nil {
		return false, err
	}
	switch {
	case publisher == status.KafkaPublisher && pause:
		return c.s.relay.PauseTopic(ctx, topic)
	case publisher == status.KafkaPublisher:
		return c.s.relay.ResumeTopic(ctx, topic)
	case pause:
		return c.s.relay.PauseTopicOf(ctx, publisher, topic)
	}
	return c.s.relay.ResumeTopicOf(ctx, publisher, topic)
}

// humanBytes is n bytes for a person, as the relay's log and `cdc-relay
// status` say the WAL a slot keeps: 512 B, 3.2 MiB, 1.5 GiB.
func humanBytes(n int64) string { return replication.Slot{RetainedBytes: n}.Retained() }

// humanDuration is d rounded to what a person reads: seconds under a
// minute, then minutes, hours and days.
func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// formatTime is t in UTC to the second, "" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// recordText is a record's key or value as text: itself when it is UTF-8,
// else its bytes in hex. The templates escape it; it is never HTML.
func recordText(b []byte) string {
	if b == nil {
		return ""
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("0x%x", b)
}

// shorten cuts s to n runes, with an ellipsis when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
