package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// story plays the story once with one driver, in a schema of its own.
func (d *demo) story(ctx context.Context, driver string) (run demoRun, err error) {
	admin, err := cmdutil.Connect(ctx, d.dsn, d.connectTimeout)
	if err != nil {
		return run, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var rnd [4]byte
	rand.Read(rnd[:])
	schema := "sqlfence_demo_" + driver + "_" + hex.EncodeToString(rnd[:])
	// The tables, then the guard's reach, then the rows, in one transaction: a guard
	// whose policy names inventory or jobs without a schema has put its triggers on
	// the demo's tables too (its event trigger guards tables created under those
	// names), and would reject the rows with its own error.
	tx, err := admin.Begin(ctx)
	if err != nil {
		return run, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, demoTablesSQL(schema)); err != nil {
		return run, fmt.Errorf("creating the demo's tables: %w", err)
	}
	if guarded, err := pgcatalog.GuardedInSchema(ctx, pgcatalog.PgxQuery(tx), schema); err == nil && len(guarded) > 0 {
		return run, fmt.Errorf("the database's sqlfence guard covers the demo's %s %s: its policy names %s without a schema, so the guard "+
			"puts its triggers on every table of that name, the demo's too, and rejects the writes of the demo's plain-pgx run (SF001). "+
			"Run the demo on a database without the guard: `sqlfence demo` alone starts a throwaway server, or give --dsn another database",
			cmdutil.Plural(len(guarded), "table", "tables"), strings.Join(guarded, " and "), cmdutil.Plural(len(guarded), "it", "them"))
	}
	if _, err := tx.Exec(ctx, demoRowsSQL(schema)); err != nil {
		return run, fmt.Errorf("filling the demo's tables: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return run, err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE")
	run = demoRun{Driver: driver, Expected: demoStartQuantity, FencedWrites: []demoFencedWrite{}}
	for _, j := range demoJobs {
		run.Expected -= j.ship
	}

	dsn := cmdutil.WithParam(d.dsn, "search_path", schema)
	var workers [2]*worker
	for i, name := range []string{"A", "B"} {
		if workers[i], err = startWorker(ctx, d.exe, name, driver, dsn, d.policy, d.lease); err != nil {
			return run, err
		}
		defer workers[i].close()
	}
	a, b := workers[0], workers[1]
	for _, w := range workers {
		r, err := w.await(ctx)
		if err == nil && r.Error != "" {
			err = errors.New(r.Error)
		}
		if err != nil {
			return run, fmt.Errorf("worker %s did not start: %w", w.name, err)
		}
	}

	add := func(s demoStep) { run.Steps = append(run.Steps, s) }
	qty := func(n int64) *int64 { return &n }
	// do runs a command that must succeed.
	do := func(w *worker, cmd string) (workerReply, error) {
		r, err := w.do(ctx, cmd)
		if err == nil && r.Error != "" {
			err = fmt.Errorf("worker %s: %s: %s", w.name, cmd, r.Error)
		}
		return r, err
	}
	claim := func(w *worker, job int64, label string) (workerReply, error) {
		r, err := do(w, fmt.Sprint("claim ", job))
		if err != nil {
			return r, err
		}
		s := demoStep{Step: label, Worker: w.name}
		switch {
		case r.Claimed:
			s.Result, s.Epoch = fmt.Sprintf("epoch %d", r.Epoch), r.Epoch
		case r.LeaseLive:
			s.Result = fmt.Sprintf("refused: epoch %d holds it", r.HolderEpoch)
		default:
			s.Result = "refused"
		}
		add(s)
		return r, nil
	}
	// handle is B's whole execution of one job: claim, read, write, complete.
	handle := func(w *worker, job, ship int64) error {
		r, err := claim(w, job, fmt.Sprintf("%s claims job %d (ship %d)", w.name, job, ship))
		if err != nil {
			return err
		}
		if !r.Claimed {
			return fmt.Errorf("worker %s could not claim job %d", w.name, job)
		}
		read, err := do(w, "read")
		if err != nil {
			return err
		}
		wr, err := do(w, "write")
		if err != nil {
			return err
		}
		s := demoStep{Step: fmt.Sprintf("%s reads the count, writes it - %d", w.name, ship), Worker: w.name, Quantity: qty(wr.Wrote),
			Result: fmt.Sprintf("%d -> %d", read.Quantity, wr.Wrote)}
		if wr.Fenced {
			s.Result, s.Fenced, s.StoredEpoch = fmt.Sprintf("%d -> FENCED (row has epoch %d)", read.Quantity, wr.StoredEpoch), true, wr.StoredEpoch
		}
		add(s)
		c, err := do(w, "complete")
		if err != nil {
			return err
		}
		add(demoStep{Step: fmt.Sprintf("%s completes job %d", w.name, job), Worker: w.name, Result: completed(c)})
		return nil
	}

	// A claims job 1 and reads the count, then is paused mid-handler.
	ra, err := claim(a, demoJobs[0].id, fmt.Sprintf("A claims job 1 (ship %d)", demoJobs[0].ship))
	if err != nil {
		return run, err
	}
	if !ra.Claimed {
		return run, errors.New("worker A could not claim job 1")
	}
	readA, err := do(a, "read")
	if err != nil {
		return run, err
	}
	add(demoStep{Step: "A reads the count", Worker: "A", Result: fmt.Sprint(readA.Quantity), Quantity: qty(readA.Quantity)})
	if err := a.pause(); err != nil {
		return run, err
	}
	add(demoStep{Step: "A is paused (SIGSTOP)", Worker: "A", Result: "stopped"})

	// While A's lease is live, nobody else gets job 1.
	rb, err := claim(b, demoJobs[0].id, "B tries to claim job 1")
	if err != nil {
		return run, err
	}
	if rb.Claimed {
		return run, fmt.Errorf("worker A's lease (%v) ran out before B tried to claim job 1: this machine is too busy for that lease; run the demo with a longer --lease", d.lease)
	}
	// Wait for the lease to run out on the arbiter's clock.
	waited := time.Now()
	if _, err := admin.Exec(ctx, fmt.Sprintf(
		"SELECT pg_sleep_until(lease_expires_at + interval '20 milliseconds') FROM %s.jobs WHERE id = $1", schema), demoJobs[0].id); err != nil {
		return run, fmt.Errorf("waiting for A's lease to run out: %w", err)
	}
	add(demoStep{Step: "A's lease runs out", Result: fmt.Sprintf("after %.1fs", time.Since(waited).Seconds())})

	for _, j := range demoJobs {
		if err := handle(b, j.id, j.ship); err != nil {
			return run, err
		}
	}

	// A wakes and finishes its handler with the count it read before the pause.
	if err := a.resume(); err != nil {
		return run, err
	}
	wa, err := do(a, "write")
	if err != nil {
		return run, err
	}
	s := demoStep{Step: fmt.Sprintf("A resumes (SIGCONT), writes %d-%d", readA.Quantity, demoJobs[0].ship), Worker: "A", Quantity: qty(wa.Wrote)}
	if wa.Fenced {
		s.Result, s.Fenced, s.StoredEpoch = fmt.Sprintf("FENCED: row has epoch %d > %d", wa.StoredEpoch, ra.Epoch), true, wa.StoredEpoch
		run.FencedWrites = append(run.FencedWrites, demoFencedWrite{Worker: "A", Job: ra.Job, Epoch: ra.Epoch, StoredEpoch: wa.StoredEpoch, Cancelled: wa.Cancelled})
	} else {
		s.Result = fmt.Sprintf("wrote %d", wa.Wrote)
	}
	add(s)
	step := demoStep{Step: "A completes job 1", Worker: "A"}
	if wa.Fenced {
		step.Result = "skipped: handler cancelled"
	} else {
		c, err := do(a, "complete")
		if err != nil {
			return run, err
		}
		step.Result = completed(c)
	}
	add(step)

	if err := admin.QueryRow(ctx, fmt.Sprintf("SELECT quantity FROM %s.inventory WHERE sku = 'widget'", schema)).Scan(&run.Final); err != nil {
		return run, err
	}
	run.LostUpdate = run.Final != run.Expected
	return run, nil
}

func completed(r workerReply) string {
	if r.Completed {
		return "done"
	}
	return "rejected: no longer its claim"
}

func demoTablesSQL(schema string) string {
	return fmt.Sprintf(`
CREATE SCHEMA %[1]s;
CREATE SEQUENCE %[1]s.sqlfence_epoch;
CREATE TABLE %[1]s.jobs (
	id               bigint PRIMARY KEY,
	sku              text NOT NULL,
	delta            int NOT NULL,
	status           text NOT NULL DEFAULT 'pending',
	lease_epoch      bigint NOT NULL DEFAULT 0,
	lease_expires_at timestamptz,
	available_at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE %[1]s.inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0
);
`, schema)
}

func demoRowsSQL(schema string) string {
	return fmt.Sprintf(`
INSERT INTO %[1]s.inventory (sku, quantity) VALUES ('widget', %[2]d);
INSERT INTO %[1]s.jobs (id, sku, delta) VALUES (%[3]d, 'widget', -%[4]d), (%[5]d, 'widget', -%[6]d);
`, schema, demoStartQuantity, demoJobs[0].id, demoJobs[0].ship, demoJobs[1].id, demoJobs[1].ship)
}
