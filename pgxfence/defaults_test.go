package pgxfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// flipText is a plain read with standard_conforming_strings on, and with it off a
// data-modifying WITH that sets every row's quantity to 0 without an epoch: the
// backslash ends the first literal in one reading and escapes its quote in the other.
const flipText = `WITH a AS (SELECT 'x\', ' AS s), u AS (UPDATE inventory SET quantity = 0 RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a`

// resetStatements return a setting to the session's default, each its own way.
var resetStatements = []string{
	`RESET ALL`, `DISCARD ALL`, `RESET %s`, `SET %s TO DEFAULT`, `SET %s = DEFAULT`, `SET LOCAL %s TO DEFAULT`,
}

var roleSeq atomic.Int64

// defaultsSession is a pool whose sessions have a default of setting = bad, from a
// database default or a role default (ALTER … SET), and set it to good after
// connect: with AfterConnect's SET (the default stays bad: a reset returns to it)
// or in the startup parameters (the default becomes good).
func defaultsPool(t *testing.T, f *fixture, p *sqlfence.Policy, mode pgx.QueryExecMode, source, setting, bad, good string, startup bool) *pgxfence.Pool {
	t.Helper()
	ctx := timeout(t, context.Background())
	cfg := f.poolConfig(t, mode)
	db := cfg.ConnConfig.Database
	switch source {
	case "database":
		f.exec(t, fmt.Sprintf(`ALTER DATABASE %q SET %s = %s`, db, setting, bad))
	case "role":
		role := fmt.Sprintf("sqlfence_defaults_%d_%s", roleSeq.Add(1), db)
		f.exec(t, fmt.Sprintf(`CREATE ROLE %q LOGIN SUPERUSER`, role))
		f.exec(t, fmt.Sprintf(`ALTER ROLE %q IN DATABASE %q SET %s = %s`, role, db, setting, bad))
		t.Cleanup(func() {
			f.raw.Exec(context.Background(), fmt.Sprintf(`DROP ROLE IF EXISTS %q`, role)) // after the database, if not now
		})
		cfg.ConnConfig.User = role
	}
	if startup {
		cfg.ConnConfig.RuntimeParams[setting] = good
	} else {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, fmt.Sprintf(`SET %s = %s`, setting, good))
			return err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := pgxfence.New(pool, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fp.Close)
	return fp
}

// TestResetToSessionDefault: on sessions whose default of standard_conforming_strings
// is off (a database or a role default) and whose AfterConnect sets it on, a batch —
// in every exec mode — or a multi-statement text whose reset (RESET ALL, DISCARD ALL,
// RESET, SET … TO DEFAULT, SET LOCAL … TO DEFAULT) comes before a text that is a
// plain read with the setting on and an unfenced UPDATE with it off is refused
// before anything is sent (SF405): the rows stay as they were. In a transaction the
// reset is refused the same way. With the setting in the startup parameters the
// default is on, and the same batches pass and change nothing.
func TestResetToSessionDefault(t *testing.T) {
	p := policy(t, "")
	const want = "a:10:5 b:20:5"
	for _, source := range []string{"database", "role"} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			for _, mode := range modes {
				for _, startup := range []bool{false, true} {
					db := defaultsPool(t, f, p, mode, source, "standard_conforming_strings", "off", "on", startup)
					for _, reset := range resetStatements {
						reset := strings.ReplaceAll(reset, "%s", "standard_conforming_strings")
						name := fmt.Sprintf("%s/%s/startup %v", mode, reset, startup)
						ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 9)
						for _, how := range []string{"batch", "batch after a read", "text", "transaction"} {
							var err error
							switch how {
							case "batch", "batch after a read":
								b := &pgx.Batch{}
								if how == "batch after a read" {
									b.Queue(`SELECT 1`)
								}
								b.Queue(reset)
								b.Queue(flipText)
								err = db.SendBatch(ctx, b).Close()
							case "text":
								_, err = db.Exec(ctx, reset+`; `+flipText)
							case "transaction":
								var tx pgx.Tx
								if tx, err = db.Begin(ctx); err != nil {
									t.Fatal(err)
								}
								if _, err = tx.Exec(ctx, reset); err == nil {
									_, err = tx.Exec(ctx, flipText)
								}
								if cerr := tx.Commit(ctx); err == nil {
									err = cerr
								}
							}
							if startup {
								// The server may refuse DISCARD ALL in a transaction or a
								// pipeline; sqlfence lets it through.
								if isSqlfence(err) {
									t.Fatalf("%s/%s: refused with the default on: %v", name, how, err)
								}
							} else {
								var se *sqlfence.Error
								if !errors.As(err, &se) || se.Code != rulecode.Setting || !strings.Contains(se.Error(), "default, off") {
									t.Fatalf("%s/%s: %v, want %s naming the default", name, how, err, rulecode.Setting)
								}
							}
							if got := f.state(t, inventoryState); got != want {
								t.Fatalf("%s/%s: rows changed: %s", name, how, got)
							}
						}
					}
				}
			}
		})
	}
}

func isSqlfence(err error) bool {
	var se *sqlfence.Error
	return errors.As(err, &se)
}

// TestResetOtherPinned: the other settings a decision rests on are judged the same
// way: synchronous_commit (a reset to a default of off would acknowledge commits
// early: SF417) and session_replication_role (to replica, which switches the
// guard's triggers off: SF405). The refused reset leaves the session as it was.
func TestResetOtherPinned(t *testing.T) {
	p := policy(t, "")
	f := newFixture(t)
	for _, c := range []struct{ setting, bad, good, code string }{
		{"synchronous_commit", "off", "on", rulecode.SynchronousCommit},
		{"synchronous_commit", "local", "remote_apply", rulecode.SynchronousCommit},
		{"session_replication_role", "replica", "origin", rulecode.Setting},
	} {
		for _, source := range []string{"database", "role"} {
			db := defaultsPool(t, f, p, pgx.QueryExecModeExec, source, c.setting, c.bad, c.good, false)
			ctx := timeout(t, context.Background())
			for _, reset := range resetStatements {
				reset := strings.ReplaceAll(reset, "%s", c.setting)
				b := &pgx.Batch{}
				b.Queue(reset)
				b.Queue(`SELECT 1`)
				err := db.SendBatch(ctx, b).Close()
				var se *sqlfence.Error
				if !errors.As(err, &se) || se.Code != c.code || !strings.Contains(se.Error(), c.bad) {
					t.Fatalf("%s default %s %s: %v, want %s", source, c.setting, reset, err, c.code)
				}
				var now string
				if err := db.QueryRow(ctx, `SELECT current_setting('`+c.setting+`')`).Scan(&now); err != nil || now != c.good {
					t.Fatalf("%s: %s after the refusal: %q, %v", reset, c.setting, now, err)
				}
			}
			f.exec(t, `ALTER DATABASE "`+f.poolConfig(t, pgx.QueryExecModeExec).ConnConfig.Database+`" RESET ALL`)
		}
	}
}

// TestRoleSwitchKeepsSettings: SET ROLE and SET SESSION AUTHORIZATION (and their
// RESETs) do not apply the role's defaults — PostgreSQL applies those at login
// only — so they are not resets of a pinned setting: a session switched to a role
// whose default is standard_conforming_strings = off keeps it on. sqlfence refuses
// SET ROLE and SET SESSION AUTHORIZATION themselves (SF405: they change privileges),
// and lets RESET ROLE and RESET SESSION AUTHORIZATION through.
func TestRoleSwitchKeepsSettings(t *testing.T) {
	f := newFixture(t)
	ctx := timeout(t, context.Background())
	db := f.poolConfig(t, pgx.QueryExecModeExec).ConnConfig.Database
	role := fmt.Sprintf("sqlfence_switch_%d_%s", roleSeq.Add(1), db)
	f.exec(t, fmt.Sprintf(`CREATE ROLE %q`, role))
	t.Cleanup(func() { f.raw.Exec(context.Background(), fmt.Sprintf(`DROP ROLE IF EXISTS %q`, role)) })
	f.exec(t, fmt.Sprintf(`ALTER ROLE %q SET standard_conforming_strings = off`, role))
	f.exec(t, fmt.Sprintf(`ALTER ROLE %q IN DATABASE %q SET standard_conforming_strings = off`, role, db))
	conn, err := f.raw.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{`SET SESSION AUTHORIZATION %q`, `SET ROLE %q`} {
		if _, err := conn.Exec(ctx, fmt.Sprintf(q, role)); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := conn.QueryRow(ctx, `SELECT current_setting('standard_conforming_strings')`).Scan(&v); err != nil || v != "on" {
			t.Fatalf("%s: standard_conforming_strings %q, %v", q, v, err)
		}
		if _, err := conn.Exec(ctx, `RESET SESSION AUTHORIZATION`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `RESET ROLE`); err != nil {
			t.Fatal(err)
		}
	}
	fp := f.pool(t, policy(t, ""), pgx.QueryExecModeExec)
	for _, q := range []string{`SET ROLE %q`, `SET SESSION AUTHORIZATION %q`} {
		_, err := fp.Exec(ctx, fmt.Sprintf(q, role))
		var se *sqlfence.Error
		if !errors.As(err, &se) || se.Code != rulecode.Setting {
			t.Fatalf("%s: %v, want %s", q, err, rulecode.Setting)
		}
	}
	for _, q := range []string{`RESET ROLE`, `RESET SESSION AUTHORIZATION`} {
		if _, err := fp.Exec(ctx, q); err != nil && isSqlfence(err) {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
