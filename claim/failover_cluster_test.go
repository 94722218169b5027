package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

// startReplicaSet starts a primary with standbys for one test; under CI=true a
// machine without the server binaries fails the test.
func startReplicaSet(t *testing.T, ctx context.Context, o pgcluster.ReplicaOptions) *pgcluster.ReplicaSet {
	t.Helper()
	rs, err := pgcluster.StartReplicaSet(ctx, o)
	if errors.Is(err, pgcluster.ErrNoServer) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	return rs
}

// caughtUp waits until standby has replayed everything primary has written.
func caughtUp(t *testing.T, ctx context.Context, primary, standby *pgcluster.Node) {
	t.Helper()
	var lsn string
	if err := queryOn(ctx, primary, `SELECT pg_current_wal_lsn()::text`, &lsn); err != nil {
		t.Fatal(err)
	}
	for {
		var ok bool
		if err := queryOn(ctx, standby, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, &ok, lsn); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never replayed up to %s", standby.Name(), lsn)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func queryOn(ctx context.Context, n *pgcluster.Node, q string, dest any, args ...any) error {
	c, err := n.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return c.QueryRow(ctx, q, args...).Scan(dest)
}

// failoverCase is one claim table and epoch source in a failover: its helpers in
// today's format and, for the teeth, the format before timelines.
type failoverCase struct {
	name   string
	legacy bool
	src    claim.EpochSource
	ledger bool
	jobs   *claim.Jobs
	lg     *claim.Ledger
	table  string
}

func (c *failoverCase) claimJob(ctx context.Context, db claim.DB, job int) (*claim.Lease, error) {
	if c.ledger {
		return c.lg.Claim(ctx, db, fmt.Sprintf("m%d", job))
	}
	return c.jobs.Claim(ctx, db, int64(job))
}

func (c *failoverCase) schema() string {
	if c.ledger {
		return c.lg.Schema()
	}
	return c.jobs.Schema() + fmt.Sprintf("INSERT INTO %s SELECT FROM generate_series(1, 4);\n", c.table)
}

func failoverCases(t *testing.T) []*failoverCase {
	var cases []*failoverCase
	for _, legacy := range []bool{false, true} {
		for _, src := range []claim.EpochSource{claim.GlobalEpoch, claim.PerJobEpoch, claim.CounterEpoch} {
			for _, ledger := range []bool{false, true} {
				kind := "jobs"
				if ledger {
					kind = "ledger"
				}
				name := strings.ToLower(fmt.Sprintf("%s_%s", kind, src))
				if legacy {
					name += "_legacy"
				}
				c := &failoverCase{name: name, legacy: legacy, src: src, ledger: ledger, table: name}
				var err error
				switch {
				case ledger && legacy:
					c.lg, err = claim.NewLedgerBeforeTimelines(claim.LedgerConfig{Table: name, Epochs: src, Sequence: "seq_" + name, Counter: "ctr_" + name, RenewEvery: -1, Lease: time.Minute})
				case ledger:
					c.lg, err = claim.NewLedger(claim.LedgerConfig{Table: name, Epochs: src, Sequence: "seq_" + name, Counter: "ctr_" + name, RenewEvery: -1, Lease: time.Minute})
				case legacy:
					c.jobs, err = claim.NewJobsBeforeTimelines(claim.JobsConfig{Table: name, Epochs: src, Sequence: "seq_" + name, Counter: "ctr_" + name, RenewEvery: -1, Lease: time.Minute})
				default:
					c.jobs, err = claim.NewJobs(claim.JobsConfig{Table: name, Epochs: src, Sequence: "seq_" + name, Counter: "ctr_" + name, RenewEvery: -1, Lease: time.Minute})
				}
				if err != nil {
					t.Fatal(err)
				}
				cases = append(cases, c)
			}
		}
	}
	return cases
}

// retry runs op until it fails for another reason than the connection: a pool on
// a multi-host DSN finds the promoted standby once its old connections have died.
func retry(ctx context.Context, op func() error) error {
	for {
		err := op()
		if err == nil || !isConnError(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isConnError(err error) bool {
	s := err.Error()
	for _, m := range []string{"connection refused", "unexpected EOF", "broken pipe", "connection reset", "conn closed", "closed the connection", "terminating connection", "bad connection", "outcome is unknown", "read-only", "recovery is in progress"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// TestFailoverAsync: a primary with an asynchronous standby. The standby stops
// receiving, the primary hands out more claims, and dies; the standby is promoted.
// For every epoch source, in a jobs table and a claim table: the claims lost with
// the primary's WAL tail are not handed out again — the superseded holder's renewal,
// claim-checked write and completion are refused, the successor's go through — a
// live claim that survived raises the failover alarm, and a lost claim nobody took
// again is reported as lost. The same run in the format before timelines hands the
// lost epochs out again, and its stale holder renews, writes and completes the
// successor's job: what the format prevents.
func TestFailoverAsync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rs := startReplicaSet(t, ctx, pgcluster.ReplicaOptions{Standbys: 1})
	primary, standby := rs.Nodes()[0], rs.Nodes()[1]
	cases := failoverCases(t)

	var ddl strings.Builder
	ddl.WriteString(inventoryDDL)
	policy := "version: 1\ncatalog_refresh: 1h\ntables: [inventory]\nclaims:\n"
	for _, c := range cases {
		ddl.WriteString(c.schema())
		fmt.Fprintf(&ddl, "INSERT INTO inventory (sku, quantity) VALUES ('%s', 100);\n", c.name)
		policy += "  - table: " + c.table + "\n"
	}
	if err := execOn(ctx, primary, ddl.String()); err != nil {
		t.Fatal(err)
	}
	dsn := rs.MultiHostDSN("postgres")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pol, err := sqlfence.ParsePolicy([]byte(policy), "failover")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fenced := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	defer fenced.Close()
	if err := fenced.PingContext(ctx); err != nil { // the connector's first position: timeline 1
		t.Fatal(err)
	}

	// Replicated: job 1 claimed and completed, job 2 claimed and held.
	type held struct{ live, lost, orphan *claim.Lease }
	leases := map[string]*held{}
	for _, c := range cases {
		h := &held{}
		leases[c.name] = h
		l, err := c.claimJob(ctx, db, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := l.Complete(ctx); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.live, err = c.claimJob(ctx, db, 2); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	caughtUp(t, ctx, primary, standby)
	if err := standby.CutReplication(ctx); err != nil {
		t.Fatal(err)
	}
	// Lost with the WAL tail: job 3 (claimed again after the failover) and job 4
	// (not claimed again). A sequence logs its value 32 draws ahead, so a standby
	// knows a value above the last ones drawn unless the tail held more: 40 more
	// draws make the promoted standby's sequence fall behind the lost epochs.
	for _, c := range cases {
		h := leases[c.name]
		if c.src == claim.GlobalEpoch {
			if _, err := db.ExecContext(ctx, fmt.Sprintf("SELECT nextval('seq_%s') FROM generate_series(1, 40)", c.name)); err != nil {
				t.Fatal(err)
			}
		}
		if h.lost, err = c.claimJob(ctx, db, 3); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.orphan, err = c.claimJob(ctx, db, 4); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, err := standby.Position(ctx); err != nil || pos.Timeline != 2 {
		t.Fatalf("promoted standby at %v (%v), want timeline 2", pos, err)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := leases[c.name]
			defer h.live.Stop()
			defer h.lost.Stop()
			defer h.orphan.Stop()
			var succ *claim.Lease
			if err := retry(ctx, func() (err error) { succ, err = c.claimJob(ctx, db, 3); return err }); err != nil {
				t.Fatalf("claiming job 3 on the promoted standby: %v", err)
			}
			defer succ.Stop()
			claimed := sqlfence.WithClaim(sqlfence.WithEpoch(ctx, h.lost.Epoch), sqlfence.Claim{
				Table: c.table, KeyColumn: map[bool]string{true: "job_id", false: "id"}[c.ledger], EpochColumn: "lease_epoch", Key: h.lost.JobID, Epoch: h.lost.Epoch})
			var write error
			_ = retry(ctx, func() error {
				_, write = fenced.ExecContext(claimed, `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, c.name)
				return write
			})
			renew := h.lost.Renew(ctx)

			if c.legacy {
				// The teeth: the promoted standby hands out an epoch not above the
				// lost ones.
				if succ.Epoch > h.lost.Epoch {
					t.Fatalf("before timelines: the successor drew %d, above the lost claim's %d; expected the lost epochs to come back", succ.Epoch, h.lost.Epoch)
				}
				if succ.Epoch == h.lost.Epoch {
					// The same epoch again: the superseded holder acts as if it held
					// the job, and completes the successor's.
					if renew != nil || write != nil {
						t.Fatalf("before timelines: the superseded holder's renewal (%v) and write (%v) were expected to pass", renew, write)
					}
					if err := h.lost.Complete(ctx); err != nil {
						t.Fatalf("before timelines: the superseded holder's completion: %v", err)
					}
					t.Logf("before timelines: epoch %d handed out twice; the superseded holder renewed, wrote and completed the successor's job", succ.Epoch)
					return
				}
				// Below a lost epoch: a bare write of the lost epoch fences the
				// successor out.
				if _, err := fenced.ExecContext(sqlfence.WithEpoch(ctx, h.lost.Epoch), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, c.name); err != nil {
					t.Fatalf("before timelines: the stale holder's bare write: %v", err)
				}
				if _, err := fenced.ExecContext(sqlfence.WithEpoch(ctx, succ.Epoch), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, c.name); !errors.Is(err, sqlfence.ErrFenced) {
					t.Fatalf("before timelines: the successor's write after the stale one: %v, expected it fenced", err)
				}
				t.Logf("before timelines: the successor drew %d, below the lost %d; a bare write of the lost epoch fenced the valid successor out", succ.Epoch, h.lost.Epoch)
				return
			}
			// A bare write of the lost epoch cannot fence the successor out: the
			// successor's epoch is above it.
			if _, err := fenced.ExecContext(sqlfence.WithEpoch(ctx, h.lost.Epoch), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, c.name); err != nil {
				t.Fatalf("the stale holder's bare write before the successor's: %v", err)
			}
			if _, err := fenced.ExecContext(succ.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, c.name); err != nil {
				t.Fatalf("the successor's write after the stale one: %v", err)
			}
			if _, err := fenced.ExecContext(sqlfence.WithEpoch(ctx, h.lost.Epoch), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, c.name); !errors.Is(err, sqlfence.ErrFenced) {
				t.Fatalf("the stale holder's bare write after the successor's: %v, want ErrFenced", err)
			}
			if succ.Epoch <= h.lost.Epoch || succ.Epoch <= h.orphan.Epoch || succ.Epoch <= h.live.Epoch {
				t.Fatalf("the successor drew %d, not above the lost claims %d, %d and the live one %d", succ.Epoch, h.lost.Epoch, h.orphan.Epoch, h.live.Epoch)
			}
			if !errors.Is(renew, sqlfence.ErrFenced) {
				t.Errorf("the superseded holder renewed: %v", renew)
			}
			if !errors.Is(write, sqlfence.ErrFenced) {
				t.Errorf("the superseded holder's claim-checked write: %v, want ErrFenced", write)
			}
			if err := h.lost.Complete(ctx); !errors.Is(err, sqlfence.ErrFenced) && !errors.Is(err, claim.ErrEnded) {
				t.Errorf("the superseded holder's completion: %v, want ErrFenced", err)
			}
			if err := succ.Complete(ctx); err != nil {
				t.Errorf("the successor's completion: %v", err)
			}
			// A lost claim nobody took again: lost, not superseded.
			if err := retry(ctx, func() error { return h.orphan.Renew(ctx) }); !errors.Is(err, claim.ErrFailover) || errors.Is(err, sqlfence.ErrFenced) {
				t.Errorf("renewal of a lost claim: %v, want ErrFailover", err)
			}
			// A live claim that survived: the timeline moved under it.
			var fe *claim.FailoverError
			if err := retry(ctx, func() error { return h.live.Renew(ctx) }); !errors.As(err, &fe) || fe.ClaimTimeline != 1 || fe.Timeline != 2 {
				t.Errorf("renewal of a live claim across the failover: %v, want a *FailoverError from timeline 1 to 2", err)
			}
		})
	}
	oldPrimaryBack(t, ctx, primary, fenced)
}

// (after the cases) The old primary restarted without a rewind serves its own
// timeline 1 and takes writes; the multi-host DSN lists it first. The connector,
// which has used timeline 2, refuses it before any statement.
func oldPrimaryBack(t *testing.T, ctx context.Context, old *pgcluster.Node, fenced *sql.DB) {
	t.Helper()
	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, err := old.Position(ctx); err != nil || pos.Timeline != 1 || pos.Standby {
		t.Fatalf("the old primary restarted at %v (%v), want a primary on timeline 1", pos, err)
	}
	fenced.SetMaxIdleConns(0) // the next statement opens a new session, on the old primary
	_, err := fenced.ExecContext(ctx, `SELECT 1`)
	var fe *sqlfence.Error
	if !errors.As(err, &fe) || fe.Code != "SF707" || !strings.Contains(err.Error(), "timeline 1") || !strings.Contains(err.Error(), "timeline 2") {
		t.Fatalf("a session on the old primary, through the connector that used timeline 2: %v, want SF707 naming both timelines", err)
	}
}

func execOn(ctx context.Context, n *pgcluster.Node, sql string) error {
	c, err := n.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// TestFailoverSync: a primary with a synchronous standby, and a session that
// turned synchronous_commit to local. Claims still wait for the standby: once the
// standby stops receiving, a claim hangs and ends with ErrOutcomeUnknown, no lease;
// after the failover every acknowledged claim is on the promoted standby, and no
// epoch is handed out again. The statements before timelines, on the same session,
// are acknowledged without the standby, lost, and handed out again.
func TestFailoverSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rs := startReplicaSet(t, ctx, pgcluster.ReplicaOptions{Standbys: 1, Synchronous: true})
	primary, standby := rs.Nodes()[0], rs.Nodes()[1]
	cfg := claim.JobsConfig{Table: "jobs", RenewEvery: -1, Lease: time.Minute, Epochs: claim.PerJobEpoch}
	now := newJobs(t, cfg)
	strict := newJobs(t, claim.JobsConfig{Table: "jobs", RenewEvery: -1, Lease: time.Minute, Epochs: claim.PerJobEpoch, RequireSynchronousStandby: true})
	cfg.Table = "jobs_legacy"
	legacy, err := claim.NewJobsBeforeTimelines(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := execOn(ctx, primary, now.Schema()+legacy.Schema()+
		`INSERT INTO jobs SELECT FROM generate_series(1, 4); INSERT INTO jobs_legacy SELECT FROM generate_series(1, 4);`); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", rs.MultiHostDSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET synchronous_commit = local`); err != nil {
		t.Fatal(err)
	}
	acked := map[string]*claim.Lease{}
	if acked["jobs 1"], err = strict.Claim(ctx, conn, int64(1)); err != nil {
		t.Fatalf("a claim requiring a synchronous standby, with one attached: %v", err)
	}
	if acked["legacy 1"], err = legacy.Claim(ctx, conn, int64(1)); err != nil {
		t.Fatal(err)
	}
	if err := standby.CutReplication(ctx); err != nil {
		t.Fatal(err)
	}
	// The standby receives nothing: a claim's commit waits for it.
	hung, stop := context.WithTimeout(ctx, 2*time.Second)
	_, err = now.Claim(hung, conn, int64(2))
	stop()
	if !errors.Is(err, claim.ErrOutcomeUnknown) {
		t.Fatalf("a claim whose synchronous commit cannot complete: %v, want ErrOutcomeUnknown", err)
	}
	// Before timelines the session's local commit is honoured: acknowledged without
	// the standby, and lost.
	lost, err := legacyClaimLocal(ctx, db, legacy, 2)
	if err != nil {
		t.Fatalf("before timelines, synchronous_commit local: %v", err)
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	for name, l := range acked {
		if l == nil {
			continue
		}
		table := map[bool]string{true: "jobs_legacy", false: "jobs"}[strings.HasPrefix(name, "legacy")]
		var stored int64
		if err := queryOn(ctx, standby, fmt.Sprintf(`SELECT lease_epoch FROM %s WHERE id = $1`, table), &stored, l.JobID); err != nil || stored != l.Epoch {
			t.Errorf("%s: the acknowledged claim at epoch %d is at %d on the promoted standby (%v)", name, l.Epoch, stored, err)
		}
	}
	var next *claim.Lease
	if err := retry(ctx, func() (err error) { next, err = now.Claim(ctx, db, int64(2)); return err }); err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	if next.Epoch <= acked["jobs 1"].Epoch {
		t.Errorf("after the failover job 2 drew %d, not above the acknowledged %d", next.Epoch, acked["jobs 1"].Epoch)
	}
	again, err := legacy.Claim(ctx, db, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	if again.Epoch != lost.Epoch {
		t.Errorf("before timelines: job 2 drew %d after the failover, the acknowledged lost claim had %d; expected it handed out again", again.Epoch, lost.Epoch)
	}
	// The promoted standby has no synchronous standby: a claim that requires one
	// is refused and says why.
	if _, err := strict.Claim(ctx, db, int64(3)); !errors.Is(err, claim.ErrNoSynchronousStandby) {
		t.Errorf("a claim requiring a synchronous standby on the promoted standby: %v", err)
	}
}

// legacyClaimLocal claims job in the format before timelines on a session with
// synchronous_commit local.
func legacyClaimLocal(ctx context.Context, db *sql.DB, j *claim.Jobs, job int) (*claim.Lease, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SET synchronous_commit = local`); err != nil {
		conn.Close()
		return nil, err
	}
	return j.Claim(ctx, conn, int64(job))
}
