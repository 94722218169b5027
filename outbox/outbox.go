// Package outbox carries a job's effects outside the database — a payment, a
// mail, a call to another service — from the handler's fenced transaction to
// their receiver, at least once, each under its effect key.
//
// A handler adds a message with Add in the transaction that holds its
// writes: the message commits with them or not at all, and a superseded
// execution cannot add one once its successor's claim has committed (Add
// checks the claim in that transaction, claim.Lease.Check). The message's
// key is the lease's effect key for the step (claim.Lease.Key): the same for
// every execution of the job, so a successor that adds the message again
// finds it there and nothing is duplicated.
//
// A Relay delivers what was added: it takes due messages with FOR UPDATE
// SKIP LOCKED (several relays share a table), sends each with its key, marks
// it delivered, retries a failure with a growing delay, and parks a message
// that failed MaxAttempts times: it stays in the table, visible, until
// Requeue. A relay that dies mid-send leaves the message to be sent again
// once its attempt's hold runs out. Delivery is at least once: a receiver
// applies each effect once only if it deduplicates by the key (HTTP's
// Idempotency-Key header, which HTTP sets). A receiver that ignores the key
// applies a redelivered message twice; nothing on this side can prevent it.
package outbox

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// DefaultTable is the outbox table unless configured otherwise.
const DefaultTable = "sqlfence_outbox"

// MaxTopicBytes bounds a topic: it names a receiver, not data.
const MaxTopicBytes = 200

// Outbox is one outbox table. It is safe for concurrent use.
type Outbox struct {
	table  string // as PostgreSQL resolves it, for messages
	schema string

	addSQL, existingSQL, requeueSQL, parkedSQL            string
	claimSQL, deliveredSQL, retrySQL, parkSQL, releaseSQL string
}

// New prepares the statements for an outbox table, written as in SQL
// ("outbox", "app.outbox", `"Outbox"`); empty is DefaultTable.
func New(table string) (*Outbox, error) {
	if table == "" {
		table = DefaultTable
	}
	q, err := sqlfence.ParseQualifiedName(table)
	if err != nil {
		return nil, fmt.Errorf("outbox [SF617]: bad outbox table %q: %v", table, err)
	}
	parts := []string{q.Name}
	if q.Schema != "" {
		parts = []string{q.Schema, q.Name}
	}
	T := sqlident.QuoteQualified(parts...)
	o := &Outbox{table: strings.Join(parts, ".")}
	o.schema = fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key text NOT NULL UNIQUE,
	topic text NOT NULL,
	payload bytea NOT NULL,
	job_table text NOT NULL,
	job_id text NOT NULL,
	step text NOT NULL,
	epoch bigint NOT NULL,
	added_at timestamptz NOT NULL DEFAULT now(),
	attempts int NOT NULL DEFAULT 0,
	next_attempt_at timestamptz NOT NULL DEFAULT now(),
	delivered_at timestamptz,
	parked_at timestamptz,
	last_error text
);
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (next_attempt_at, id) WHERE delivered_at IS NULL AND parked_at IS NULL;
`, T, indexName(q.Name, "_due_idx"))
	o.addSQL = "INSERT INTO " + T + " (key, topic, payload, job_table, job_id, step, epoch) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (key) DO NOTHING"
	o.existingSQL = "SELECT topic, payload, epoch FROM " + T + " WHERE key = $1"
	o.requeueSQL = "UPDATE " + T + " SET parked_at = NULL, attempts = 0, next_attempt_at = now() WHERE key = $1 AND parked_at IS NOT NULL"
	o.parkedSQL = "SELECT " + columns + " FROM " + T + " WHERE parked_at IS NOT NULL ORDER BY parked_at, id LIMIT $1"
	// A relay's attempt: the next due message, locked so that concurrent
	// relays skip it, its attempt counted and its next attempt moved past the
	// hold ($1 µs) in the same statement, which commits before the send. A
	// relay that dies mid-send has counted the attempt, so a message that
	// kills relays is parked too, and the hold hands it to the next relay.
	o.claimSQL = "UPDATE " + T + " SET attempts = attempts + 1, next_attempt_at = now() + $1::bigint * interval '1 microsecond' " +
		"WHERE id = (SELECT id FROM " + T + " WHERE delivered_at IS NULL AND parked_at IS NULL AND next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) " +
		"RETURNING " + columns
	// Delivered is delivered, whichever attempt it was: no attempt condition.
	o.deliveredSQL = "UPDATE " + T + " SET delivered_at = now(), last_error = NULL WHERE id = $1 AND delivered_at IS NULL"
	// A failure is recorded only by the attempt that failed, if it is still
	// the last one: a relay paused past its hold must not overwrite what a
	// later attempt found. attempts is the attempt's fencing token.
	o.retrySQL = "UPDATE " + T + " SET next_attempt_at = now() + $3::bigint * interval '1 microsecond', last_error = $4 WHERE id = $1 AND attempts = $2 AND delivered_at IS NULL AND parked_at IS NULL"
	// A relay that stops during a send gives the attempt back.
	o.releaseSQL = "UPDATE " + T + " SET attempts = attempts - 1, next_attempt_at = now() WHERE id = $1 AND attempts = $2 AND delivered_at IS NULL AND parked_at IS NULL"
	o.parkSQL = "UPDATE " + T + " SET parked_at = now(), last_error = $3 WHERE id = $1 AND attempts = $2 AND delivered_at IS NULL AND parked_at IS NULL"
	return o, nil
}

const columns = "id, key, topic, payload, job_table, job_id, step, epoch, attempts, COALESCE(last_error, '')"

// indexName derives an index name PostgreSQL does not truncate (a truncated
// name could collide with another table's, and IF NOT EXISTS would skip it).
func indexName(table, suffix string) string {
	base := table
	for len(base)+len(suffix) > sqlident.MaxBytes {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	return sqlident.Quote(base + suffix)
}

// Schema returns DDL that creates the outbox table; it does nothing to a
// table that exists. The table is the library's own, not a protected table:
// Add checks the claim itself.
func (o *Outbox) Schema() string { return o.schema }

// Table returns the outbox table's name as PostgreSQL resolves it.
func (o *Outbox) Table() string { return o.table }

// Message is one effect in the outbox.
type Message struct {
	ID      int64
	Key     string // the effect key: pass it to the receiver (HTTP does)
	Topic   string // which receiver: the Relay's Send routes by it
	Payload []byte

	JobTable, JobID, Step string // the job and step that added it
	Epoch                 int64  // the epoch of the execution that added it
	Attempt               int    // this delivery's attempt, from 1
	LastError             string // the previous attempt's failure, if any
}

// ErrKeyReused: Add found the step's key holding a different message. Two
// effects under one key would be one effect to the receiver, so Add refuses
// rather than drop one of them silently.
var ErrKeyReused = errors.New("outbox [SF620]: effect key already holds a different message")

// Add adds a message for step of l's job to tx, the handler's transaction,
// under the step's effect key. It checks first that l still holds its job
// (claim.Lease.Check): a superseded execution's Add fails with an error
// matching sqlfence.ErrFenced, and a successor's claim cannot commit before
// tx ends. added is false when an earlier execution's committed transaction
// already added the same message (same topic and payload): it is not added
// twice. The same key with a different message is ErrKeyReused.
//
// The message reaches the relay when tx commits; a rollback takes it back.
func (o *Outbox) Add(ctx context.Context, tx claim.DB, l *claim.Lease, step, topic string, payload []byte) (added bool, err error) {
	key, err := l.Key(step)
	if err != nil {
		return false, err
	}
	if err := checkTopic(topic); err != nil {
		return false, fmt.Errorf("outbox [SF617]: message for step %q of job %v: %w", step, l.JobID, err)
	}
	if payload == nil {
		payload = []byte{}
	}
	if err := l.Check(ctx, tx); err != nil {
		return false, err
	}
	job := claim.JobText(l.JobID)
	jobTable := l.Table()
	res, err := tx.ExecContext(ctx, o.addSQL, key, topic, payload, jobTable, job, step, l.Epoch)
	if err != nil {
		return false, fmt.Errorf("outbox [SF618]: adding the message for step %q of job %v (table %s, epoch %d) to %s: %w; create the table with Outbox.Schema", step, job, jobTable, l.Epoch, o.table, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, fmt.Errorf("outbox [SF618]: adding the message for step %q of job %v to %s: %w", step, job, o.table, err)
	} else if n == 1 {
		return true, nil
	}
	var (
		gotTopic   string
		gotPayload []byte
		gotEpoch   int64
	)
	if err := tx.QueryRowContext(ctx, o.existingSQL, key).Scan(&gotTopic, &gotPayload, &gotEpoch); err != nil {
		return false, fmt.Errorf("outbox [SF618]: the message for step %q of job %v conflicted with key %s in %s, and reading it failed: %w", step, job, key, o.table, err)
	}
	if gotTopic != topic || !bytes.Equal(gotPayload, payload) {
		return false, fmt.Errorf("%w: step %q of job %v (table %s), key %s, was added at epoch %d to topic %q with %d payload bytes; this execution (epoch %d) adds topic %q with %d bytes: give each effect its own step name, and build a step's message from what the job fixes, not from what changes between executions",
			ErrKeyReused, step, job, jobTable, key, gotEpoch, gotTopic, len(gotPayload), l.Epoch, topic, len(payload))
	}
	return false, nil
}

func checkTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("the topic is empty; name the receiver")
	case len(topic) > MaxTopicBytes:
		return fmt.Errorf("the topic is %d bytes, over the limit of %d", len(topic), MaxTopicBytes)
	case !utf8.ValidString(topic):
		return fmt.Errorf("the topic %q is not valid UTF-8", topic)
	case strings.IndexByte(topic, 0) >= 0:
		return fmt.Errorf("the topic %q holds a NUL byte, which PostgreSQL text cannot store", topic)
	}
	return nil
}

// Parked returns up to limit parked messages, oldest first: those whose
// receiver failed MaxAttempts times, or whose last attempt never reported.
// They stay until Requeue. db is a *sql.DB, *sql.Conn or *sql.Tx.
func (o *Outbox) Parked(ctx context.Context, db interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, limit int) ([]Message, error) {
	if limit < 1 {
		return nil, fmt.Errorf("outbox [SF617]: listing parked messages of %s: limit %d; give at least 1", o.table, limit)
	}
	rows, err := db.QueryContext(ctx, o.parkedSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox [SF618]: listing parked messages of %s: %w", o.table, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("outbox [SF618]: listing parked messages of %s: %w", o.table, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox [SF618]: listing parked messages of %s: %w", o.table, err)
	}
	return out, nil
}

// Requeue makes a parked message due again, with its attempts reset: fix the
// receiver, then requeue. A key that is not parked is an error.
func (o *Outbox) Requeue(ctx context.Context, db claim.DB, key string) error {
	res, err := db.ExecContext(ctx, o.requeueSQL, key)
	if err != nil {
		return fmt.Errorf("outbox [SF618]: requeueing %s in %s: %w", key, o.table, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("outbox [SF618]: requeueing %s in %s: %w", key, o.table, err)
	} else if n == 0 {
		return fmt.Errorf("outbox [SF617]: no parked message with key %s in %s; Parked lists them", key, o.table)
	}
	return nil
}

func scan(row interface{ Scan(...any) error }) (Message, error) {
	var m Message
	err := row.Scan(&m.ID, &m.Key, &m.Topic, &m.Payload, &m.JobTable, &m.JobID, &m.Step, &m.Epoch, &m.Attempt, &m.LastError)
	return m, err
}
