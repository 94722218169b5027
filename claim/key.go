// Effect keys: one name per effect of a job, the same for every execution.
package claim

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sqlfence/sqlfence/internal/claimctx"
)

// MaxStepBytes bounds a step name. Steps name code paths ("charge",
// "email:receipt"), not data; a longer name is a payload in the wrong place.
const MaxStepBytes = 200

// keyPrefix starts every effect key: the format's version, so that a
// receiver's logs tell a sqlfence key from the application's own.
const keyPrefix = "sf1_"

// KeyLen is the length of every effect key: keyPrefix and 43 characters of
// unpadded base64url. Receivers cap keys (a payment API at 255 characters, a
// FIFO queue's deduplication id at 128); a key of fixed length fits them all,
// whatever the job id.
const KeyLen = len(keyPrefix) + 43

// Key returns the idempotency key of one effect of this lease's job: the same
// for every execution of the job, different for every step. Two effects are
// "the same" exactly when their job (key namespace, table, job id) and step
// name are equal; the epoch is not part of the key, or a successor would
// repeat what its predecessor did under a new name.
//
// The key is sf1_ followed by the unpadded base64url SHA-256 of the four
// parts, each preceded by its length, so no two different (namespace, table,
// job, step) give the same input. It is opaque on purpose: the job id may be
// any text, and the key must fit a header and a receiver's length cap.
//
// An empty step, one over MaxStepBytes, one that is not UTF-8 or that holds
// a NUL byte is an error: a key from a mistyped or truncated name would
// silently merge or split effects.
func (l *Lease) Key(step string) (string, error) {
	return effectKey(l.t.keyNS, l.t.name.String(), l.JobID, step)
}

func effectKey(ns, table string, jobID any, step string) (string, error) {
	if err := checkStep(step); err != nil {
		return "", fmt.Errorf("claim [SF617]: effect key of job %v in table %s: %w", jobID, table, err)
	}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, part := range []string{ns, table, JobText(jobID), step} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(part)))])
		h.Write([]byte(part))
	}
	return keyPrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

func checkStep(step string) error {
	switch {
	case step == "":
		return errors.New("the step name is empty; name the effect (\"charge\", \"email:receipt\")")
	case len(step) > MaxStepBytes:
		return fmt.Errorf("the step name is %d bytes, over the limit of %d; a step names a code path: keep data in the message", len(step), MaxStepBytes)
	case !utf8.ValidString(step):
		return fmt.Errorf("the step name %q is not valid UTF-8", step)
	case strings.IndexByte(step, 0) >= 0:
		return fmt.Errorf("the step name %q holds a NUL byte, which PostgreSQL text cannot store", step)
	}
	return nil
}

// JobText is a job id as effect keys and the steps and outbox tables spell
// it: decimal for integers, the text itself for strings and byte strings.
func JobText(id any) string {
	switch v := id.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int:
		return strconv.Itoa(v)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(id)
}

// Check proves, inside db's transaction, that this claim still holds its job,
// and keeps it so until the transaction ends: it locks the job's row FOR KEY
// SHARE, the lock a takeover's FOR UPDATE waits for (or reports, Locked). A
// write the transaction makes after Check is therefore either committed
// before any successor's claim, or not at all. A claim that no longer holds
// the job gives an error matching sqlfence.ErrFenced and cancels the
// handler's context.
//
// Writes through sqlfence to protected tables carry this check themselves;
// Check is for the tables they do not cover — the steps table, the outbox, a
// successor's row — and works through any driver.
func (l *Lease) Check(ctx context.Context, db DB) error {
	if err := l.checkOpen("check"); err != nil {
		return err
	}
	var tl sql.NullInt64
	err := db.QueryRowContext(claimctx.With(ctx), l.t.checkSQL, l.JobID, l.Epoch).Scan(&tl)
	if errors.Is(err, sql.ErrNoRows) {
		err = l.notHeld(ctx, db, "claim check", l.t.checkSQL)
		l.cancel(err)
		return err
	}
	if err != nil {
		return fmt.Errorf("claim [SF618]: checking the claim on job %v in table %s, epoch %d: %w", l.JobID, l.t.name, l.Epoch, err)
	}
	if err := l.checkTimeline(ctx, "claim check", tl); err != nil {
		l.cancel(err)
		return err
	}
	return nil
}

// Table returns the jobs or claim table the lease was claimed in, as
// PostgreSQL resolves it: with the job id, the job's identity.
func (l *Lease) Table() string { return l.t.name.String() }
