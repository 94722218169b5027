// The getting-started worker: schema, enqueue, claim, handle, complete, and a fence.
// The README's "Getting started" quotes this file; a test keeps the two the same.

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/sqlfence/sqlfence" // registers the drivers "sqlfence" and "pgx"
	"github.com/sqlfence/sqlfence/claim"
)

// schema follows jobs.Schema(), which creates the jobs table with the claim's own
// columns only: the job's payload (sku, qty) is added here.
const schema = `
ALTER TABLE jobs ADD COLUMN sku text NOT NULL, ADD COLUMN qty int NOT NULL;

CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0 -- the epoch of the last write; sqlfence sets it
);
INSERT INTO inventory (sku, quantity) VALUES ('widget', 10);
`

const ship = `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`

func run(ctx context.Context, out io.Writer, dsn, policy string) error {
	// Claims return the payload columns with the job.
	jobs, err := claim.NewJobs(claim.JobsConfig{Returning: []string{"sku", "qty"}})
	if err != nil {
		return err
	}

	// The migration runs on a plain pgx handle: a fenced one refuses DDL.
	migrate, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer migrate.Close()
	if _, err := migrate.ExecContext(ctx, jobs.Schema()+schema); err != nil {
		return err
	}

	// Everything else goes through sqlfence.
	db, err := sql.Open("sqlfence", withPolicy(dsn, policy))
	if err != nil {
		return err // no policy, or a bad one: sqlfence never runs unfenced
	}
	defer db.Close()

	// Enqueue: a job is a row; status, epoch and lease take their defaults (pending, claimable now).
	for range 2 {
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (sku, qty) VALUES ($1, $2)`, "widget", 3); err != nil {
			return err
		}
	}

	// Claim, handle, complete.
	var sku string
	var qty int
	lease, err := jobs.ClaimNext(ctx, db, &sku, &qty) // claim.ErrNoJob when there is none
	if err != nil {
		return err
	}
	defer lease.Stop()
	// lease.Context() carries the epoch: the write is fenced.
	if _, err := db.ExecContext(lease.Context(), ship, sku, qty); err != nil {
		return err
	}
	if err := lease.Complete(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "job %v: shipped %d %s at epoch %d\n", lease.JobID, qty, sku, lease.Epoch)

	return fence(ctx, out, db, jobs)
}

// fence shows a fence: worker A claims the second job and stalls (a GC pause, a
// stopped VM) past its lease; worker B takes the job over and ships it; A wakes and
// writes.
func fence(ctx context.Context, out io.Writer, db *sql.DB, jobs *claim.Jobs) error {
	// A claims with a short lease and no keeper, so the lease runs out while it stalls.
	short, err := claim.NewJobs(claim.JobsConfig{Returning: []string{"sku", "qty"}, Lease: 100 * time.Millisecond, RenewEvery: -1})
	if err != nil {
		return err
	}
	var sku string
	var qty int
	a, err := short.ClaimNext(ctx, db, &sku, &qty)
	if err != nil {
		return err
	}
	defer a.Stop()
	time.Sleep(300 * time.Millisecond) // A stalls

	b, err := jobs.ClaimNext(ctx, db, &sku, &qty)
	if err != nil {
		return err
	}
	defer b.Stop()
	if _, err := db.ExecContext(b.Context(), ship, sku, qty); err != nil {
		return err
	}
	if err := b.Complete(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "job %v: A claimed it at epoch %d and stalled; B took it over at epoch %d and shipped %d %s\n", b.JobID, a.Epoch, b.Epoch, qty, sku)

	_, err = db.ExecContext(a.Context(), ship, sku, qty)
	if !errors.Is(err, sqlfence.ErrFenced) {
		return fmt.Errorf("the late write of worker A: %v, want sqlfence.ErrFenced", err)
	}
	fmt.Fprintf(out, "A wakes and writes: %v\n", err)

	var left int
	if err := db.QueryRowContext(ctx, `SELECT quantity FROM inventory WHERE sku = $1`, sku).Scan(&left); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %d left, as two shipments of %d leave\n", sku, left, qty)
	return nil
}

// withPolicy adds the policy parameter to a URL DSN; a key=value DSN takes
// " sqlfence_policy=PATH" at its end instead.
func withPolicy(dsn, policy string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	q.Set(sqlfence.PolicyParam, policy)
	u.RawQuery = q.Encode()
	return u.String()
}
