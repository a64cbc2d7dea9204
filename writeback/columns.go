package writeback

import (
	"cmp"
	"slices"
	"strings"
)

// Columns says which columns of an outbox table take a delivery's outcome,
// and the values they take. StatusColumn and Delivered are required, and
// Failed unless Retrying and Dead are both set; the others are optional
// ("" leaves that column alone).
type Columns struct {
	// StatusColumn takes Delivered once the event is in Kafka, the
	// retrying value (RetryingValue) while the relay will try it again,
	// and the dead value (DeadValue) once it is given up on.
	StatusColumn string
	// Delivered and Failed are status values, as the column's type reads
	// them from text ("DELIVERED", "SENT", "published"). Failed is the
	// value of a parked event when Retrying is not set, and of an event
	// given up on when Dead is not set.
	Delivered, Failed string
	// Retrying, if set, is the status value of an event the relay will
	// try again (parked, and due again); "" takes Failed. It may be one of
	// Pending (a poller that keeps a row PENDING with a retry count while
	// it retries): the relay's own writes do not fire the reset trigger.
	Retrying string
	// DeliveredAtColumn, if set, takes now() with Delivered.
	DeliveredAtColumn string
	// ErrorColumn, if set, takes why the event was parked or given up on,
	// and is cleared (NULL) once the event is delivered, unless KeepError.
	ErrorColumn string
	// KeepError keeps the error column's last reason once the event is
	// delivered.
	KeepError bool
	// LastAttemptColumn, if set (a timestamp column), takes now() with
	// each outcome of a delivery attempt: delivered, parked, failed again,
	// given up on.
	LastAttemptColumn string
	// Dead, if set, is the status value of an event given up on (DEAD in
	// the relay's status table: a row that cannot become a record, the
	// poller's last attempt failed, `failed purge`); "" takes Failed.
	Dead string
	// AttemptsColumn, if set (an integer column), takes the failed
	// delivery attempts so far, as a retry_count column counts them: left
	// alone for an event delivered at once, 1 once it is parked, one more
	// for each attempt of the poller that fails, and the failed ones when
	// the poller delivers it.
	AttemptsColumn string
	// NextAttemptColumn, if set (a timestamp column), takes when the
	// poller tries a parked event next; left alone otherwise.
	NextAttemptColumn string
	// Pending are the status values that mean "not delivered yet" (the
	// value a new row takes, and an old poller's in-between states, such
	// as PENDING and PROCESSING). A row whose status is set back to one of
	// them is sent again; rows with one of them when the relay's slot is
	// created are adopted and sent once. Empty: neither.
	Pending []string
}

// DeadValue is the status value of an event given up on: Dead, or Failed
// when Dead is not set.
func (c *Columns) DeadValue() string { return cmp.Or(c.Dead, c.Failed) }

// RetryingValue is the status value of an event the relay will try
// again: Retrying, or Failed when Retrying is not set.
func (c *Columns) RetryingValue() string { return cmp.Or(c.Retrying, c.Failed) }

// RetryScheduled reports whether the retrying value says only "will be
// tried again", never "given up": it is not the dead value. A row in it
// when the slot is created is then adopted, as a pending one is (an old
// poller's "retry scheduled" rows).
func (c *Columns) RetryScheduled() bool { return c.RetryingValue() != c.DeadValue() }

// AdoptedValues are the status values whose rows a new slot adopts:
// Pending, and the retrying value when RetryScheduled and not pending
// already. Nil when Pending is empty: a table with no pending values
// adopts no row by its status.
func (c *Columns) AdoptedValues() []string {
	if len(c.Pending) == 0 {
		return nil
	}
	values := slices.Clone(c.Pending)
	if v := c.RetryingValue(); c.RetryScheduled() && !slices.Contains(values, v) {
		values = append(values, v)
	}
	return values
}

// RetryingIsPending reports whether the retrying value is one of Pending:
// the relay's write of it must then be marked as its own, so that the
// reset trigger does not take it for a runbook's reset.
func (c *Columns) RetryingIsPending() bool { return slices.Contains(c.Pending, c.RetryingValue()) }

// NamedColumn is a column write-back writes and the write_back key that
// names it ("status_column", "error_column").
type NamedColumn struct{ Key, Name string }

// WrittenColumns are the columns write-back writes, with their keys: the
// status column, then each optional column that is set, in the order of
// the keys.
func (c *Columns) WrittenColumns() []NamedColumn {
	var out []NamedColumn
	for _, col := range []NamedColumn{
		{"status_column", c.StatusColumn}, {"delivered_at_column", c.DeliveredAtColumn}, {"error_column", c.ErrorColumn},
		{"attempts_column", c.AttemptsColumn}, {"next_attempt_column", c.NextAttemptColumn}, {"last_attempt_column", c.LastAttemptColumn},
	} {
		if col.Name != "" {
			out = append(out, col)
		}
	}
	return out
}

// Lifecycle says, a line per outcome, what a row of the table says as its
// event goes through the relay, in the table's own values and columns:
// delivered, refused and to be tried again, given up on, set back to a
// pending value by a runbook, and adopted when the slot is created.
func (c *Columns) Lifecycle() []string {
	q := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	col := func(name, value string) string {
		if name == "" {
			return ""
		}
		return ", " + name + " = " + value
	}
	delivered := c.StatusColumn + " = " + q(c.Delivered) + col(c.DeliveredAtColumn, "now()") + col(c.LastAttemptColumn, "now()")
	if c.ErrorColumn != "" && !c.KeepError {
		delivered += ", " + c.ErrorColumn + " cleared"
	}
	retrying := c.StatusColumn + " = " + q(c.RetryingValue()) + col(c.AttemptsColumn, "the failed attempts so far") +
		col(c.ErrorColumn, "the reason") + col(c.NextAttemptColumn, "when it is tried next") + col(c.LastAttemptColumn, "now()")
	if c.RetryingIsPending() {
		retrying += " (a pending value, which the relay's own write leaves pending: not a reset)"
	}
	dead := c.StatusColumn + " = " + q(c.DeadValue()) + col(c.AttemptsColumn, "the failed attempts") + col(c.ErrorColumn, "the reason") +
		col(c.LastAttemptColumn, "now() (not for purge or skip)")
	lines := []string{
		"delivered (Kafka has the event): " + delivered,
		"refused, to be tried again (until run --max-attempts gives up): " + retrying,
		"given up on (the last attempt, a row that cannot become a record, failed purge or skip): " + dead,
	}
	if len(c.Pending) == 0 {
		return append(lines, "no pending values: a row set back by a runbook is not sent again, and no row is adopted when the slot is created")
	}
	quoted := make([]string, len(c.Pending))
	for i, v := range c.Pending {
		quoted[i] = q(v)
	}
	reset := "set back to " + strings.Join(quoted, " or ") + " by a runbook (an UPDATE from another value): sent again, once, as the row is then"
	if c.RetryingIsPending() {
		reset = "set to " + strings.Join(quoted, " or ") + " by a runbook, from another value or while tried again: sent again, once, as the row is then"
	}
	lines = append(lines, reset)
	adopted := "rows in " + strings.Join(quoted, " or ")
	if v := c.RetryingValue(); c.RetryScheduled() && !c.RetryingIsPending() {
		adopted += ", and in " + q(v) + " (tried again later, not given up on)"
	}
	return append(lines, adopted+" when the slot is created: adopted, each sent once, at once")
}
