// The relay: delivers outbox messages at least once, retries, parks.
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"
)

// Relay delivers an outbox's messages. Run it in the process that adds them
// or on its own (sqlfence relay); any number of relays may share one table.
//
// Each attempt is counted and the message held (its next attempt put 2 ×
// SendTimeout ahead) in one statement that commits before the send, so no
// transaction stays open across a send. A send that succeeds marks the
// message delivered; one that fails, panics or outlives SendTimeout is
// retried after a growing delay, and after MaxAttempts failures the message
// is parked. A relay that dies mid-send leaves the message to the next relay
// once the hold runs out: delivered at least once, never lost.
type Relay struct {
	DB     *sql.DB // the outbox's database, through any driver
	Outbox *Outbox
	// Send delivers one message; nil error means the receiver has it. Give
	// the receiver m.Key (HTTP.Send sends it as the Idempotency-Key header):
	// Send may be called more than once for one message.
	Send func(ctx context.Context, m Message) error

	Workers     int           // concurrent sends; default 1
	MaxAttempts int           // attempts before a message is parked; default 10
	Backoff     time.Duration // delay after the first failure, doubling with each; default 1s
	MaxBackoff  time.Duration // the delay's cap; default 5m
	SendTimeout time.Duration // how long one send may take; default 30s
	Poll        time.Duration // how long an idle relay waits before looking again; default 1s

	// Logger gets a line per delivery (Info), failure (Warn), parked message
	// and database error (Error). Default slog.Default().
	Logger *slog.Logger
	// Observe, if set, is called with every attempt's recorded outcome (and
	// every delivery, recorded or not: the receiver has it), from the
	// goroutine that made it.
	Observe func(Event)
}

// EventKind is what happened to an attempt.
type EventKind uint8

const (
	Delivered EventKind = iota + 1 // the receiver has it
	Failed                         // the send failed; retried at Event.Retry
	Parked                         // the send failed the last allowed time, or a relay died during it
	Released                       // the relay stopped during the send; the attempt is not counted
)

func (k EventKind) String() string {
	switch k {
	case Delivered:
		return "delivered"
	case Failed:
		return "failed"
	case Parked:
		return "parked"
	case Released:
		return "released"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is the outcome of one attempt.
type Event struct {
	Kind    EventKind
	Message Message
	Err     error         // the send's failure (Failed, Parked, Released)
	Took    time.Duration // the send's duration
	Retry   time.Duration // Failed: the delay before the next attempt
}

// PanicError is a send that panicked: the relay recovers it and counts it as
// a failed attempt.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("send panicked: %v", e.Value) }

// errStopped is a send cut short by the relay's own shutdown.
var errStopped = errors.New("the relay stopped during the send")

func (r *Relay) config() (*Relay, error) {
	c := *r
	switch {
	case c.DB == nil || c.Outbox == nil || c.Send == nil:
		return nil, errors.New("outbox [SF617]: a Relay needs DB, Outbox and Send")
	case c.Workers < 0 || c.MaxAttempts < 0 || c.Backoff < 0 || c.MaxBackoff < 0 || c.SendTimeout < 0 || c.Poll < 0:
		return nil, fmt.Errorf("outbox [SF617]: relay of %s: a negative setting (Workers %d, MaxAttempts %d, Backoff %v, MaxBackoff %v, SendTimeout %v, Poll %v); zero takes the default",
			r.Outbox.table, c.Workers, c.MaxAttempts, c.Backoff, c.MaxBackoff, c.SendTimeout, c.Poll)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Backoff, time.Second)
	def(&c.MaxBackoff, 5*time.Minute)
	def(&c.SendTimeout, 30*time.Second)
	def(&c.Poll, time.Second)
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.MaxBackoff < c.Backoff {
		return nil, fmt.Errorf("outbox [SF617]: relay of %s: MaxBackoff %v is below Backoff %v", r.Outbox.table, c.MaxBackoff, c.Backoff)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = c.Logger.With("outbox", r.Outbox.table)
	return &c, nil
}

// Run delivers messages until ctx is cancelled, then returns nil once the
// sends in flight have ended (or been abandoned at SendTimeout). It returns
// an error only for a bad configuration; database errors are logged and
// retried every Poll.
func (r *Relay) Run(ctx context.Context) error {
	c, err := r.config()
	if err != nil {
		return err
	}
	c.Logger.Info("relay started", "workers", c.Workers, "max_attempts", c.MaxAttempts, "send_timeout", c.SendTimeout)
	var wg sync.WaitGroup
	for range c.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				handled, err := c.attempt(ctx)
				if err != nil && ctx.Err() == nil {
					c.Logger.Error("relay: taking the next message failed; retrying", "err", err, "retry_in", c.Poll)
				}
				if !handled || err != nil {
					sleep(ctx, c.Poll)
				}
			}
		})
	}
	wg.Wait()
	c.Logger.Info("relay stopped")
	return nil
}

// Drain makes one attempt at every message that is due, one after the
// other, and returns how many attempts it made: for a relay run from cron,
// and for tests. A database error ends it.
func (r *Relay) Drain(ctx context.Context) (attempts int, err error) {
	c, err := r.config()
	if err != nil {
		return 0, err
	}
	for {
		handled, err := c.attempt(ctx)
		if err != nil || !handled {
			return attempts, err
		}
		attempts++
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// attempt takes the next due message, sends it and records the outcome.
// handled is false when no message was due.
func (c *Relay) attempt(ctx context.Context) (handled bool, err error) {
	hold := 2 * c.SendTimeout
	m, err := scan(c.DB.QueryRowContext(ctx, c.Outbox.claimSQL, hold.Microseconds()))
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("outbox [SF618]: taking a message from %s: %w", c.Outbox.table, err)
	}
	log := c.Logger.With("key", m.Key, "topic", m.Topic, "job_table", m.JobTable, "job_id", m.JobID, "step", m.Step, "attempt", m.Attempt)
	// The outcome is recorded even when ctx ends meanwhile: a relay that is
	// shutting down still says what its last sends did. The record has a
	// deadline of its own, from the end of the send.
	recordCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), c.SendTimeout)
	}
	if m.Attempt > c.MaxAttempts {
		// The last allowed attempt was counted but never recorded: its relay
		// died during the send, or could not reach the database after it.
		serr := fmt.Errorf("attempt %d of %d ended without a result (the relay stopped during the send, or could not record it); last recorded error: %q", m.Attempt-1, c.MaxAttempts, m.LastError)
		rctx, cancel := recordCtx()
		defer cancel()
		c.record(rctx, log, m, Parked, serr, 0, 0)
		return true, nil
	}
	start := time.Now()
	serr := c.send(ctx, m)
	took := time.Since(start)
	rctx, cancel := recordCtx()
	defer cancel()
	switch {
	case serr == nil:
		c.record(rctx, log, m, Delivered, nil, took, 0)
	case ctx.Err() != nil && errors.Is(serr, errStopped):
		c.record(rctx, log, m, Released, serr, took, 0)
	case m.Attempt >= c.MaxAttempts:
		c.record(rctx, log, m, Parked, serr, took, 0)
	default:
		c.record(rctx, log, m, Failed, serr, took, c.backoff(m.Attempt))
	}
	return true, nil
}

// backoff is the delay after the n-th failed attempt: Backoff doubling per
// attempt up to MaxBackoff, drawn from its upper half so that messages that
// failed together do not all come back together.
func (c *Relay) backoff(n int) time.Duration {
	d := c.Backoff
	for i := 1; i < n && d < c.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// send runs Send under SendTimeout, turning a panic into a failure and
// abandoning a send that ignores its context.
func (c *Relay) send(ctx context.Context, m Message) error {
	sctx, cancel := context.WithTimeout(ctx, c.SendTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- &PanicError{Value: p, Stack: debug.Stack()}
			}
		}()
		done <- c.Send(sctx, m)
	}()
	var err error
	select {
	case err = <-done:
	case <-sctx.Done():
		select {
		case err = <-done: // it returned as the deadline passed
		default:
			if ctx.Err() != nil {
				return errStopped
			}
			return fmt.Errorf("the send did not return within SendTimeout %v; abandoned (a send must honour its context)", c.SendTimeout)
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errStopped, err)
	}
	return err
}

// record writes an attempt's outcome, logs it and tells the observer.
func (c *Relay) record(ctx context.Context, log *slog.Logger, m Message, kind EventKind, serr error, took, retry time.Duration) {
	var (
		stmt string
		args []any
	)
	msg := ""
	if serr != nil {
		msg = serr.Error()
	}
	switch kind {
	case Delivered:
		stmt, args = c.Outbox.deliveredSQL, []any{m.ID}
	case Failed:
		stmt, args = c.Outbox.retrySQL, []any{m.ID, m.Attempt, retry.Microseconds(), msg}
	case Parked:
		stmt, args = c.Outbox.parkSQL, []any{m.ID, m.Attempt, msg}
	case Released:
		stmt, args = c.Outbox.releaseSQL, []any{m.ID, m.Attempt}
	}
	res, err := c.DB.ExecContext(ctx, stmt, args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	switch {
	case err != nil:
		// Unrecorded: the hold runs out and the message is attempted again
		// (a delivered one delivered again, under the same key).
		log.Error("relay: recording the attempt failed; the message is attempted again once its hold runs out", "outcome", kind.String(), "send_err", msg, "err", err)
		if kind != Delivered {
			return // it did not become what kind says
		}
	case n == 0 && kind != Delivered:
		// A later attempt took the message over (this one outlived its hold),
		// or it was delivered meanwhile: that attempt's outcome stands.
		log.Warn("relay: the attempt outlived its hold; a later attempt's outcome stands", "outcome", kind.String(), "send_err", msg)
		return
	}
	switch kind {
	case Delivered:
		log.Info("relay: delivered", "took", took)
	case Failed:
		log.Warn("relay: send failed; retrying", "err", msg, "retry_in", retry, "took", took)
	case Parked:
		log.Error("relay: message parked: it stays in the outbox until requeued", "err", msg, "attempts", m.Attempt)
	case Released:
		log.Info("relay: stopped during the send; the message is due again", "took", took)
	}
	var pe *PanicError
	if errors.As(serr, &pe) {
		log.Error("relay: the send panicked", "stack", string(pe.Stack))
	}
	if c.Observe != nil {
		c.Observe(Event{Kind: kind, Message: m, Err: serr, Took: took, Retry: retry})
	}
}
