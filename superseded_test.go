package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

const earlySchema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE SCHEMA "Odd";
CREATE TABLE "Odd"."Stock Levels" (sku text PRIMARY KEY, "Fence Epoch" bigint NOT NULL DEFAULT 0);
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 9), ('c', 30, 0);
INSERT INTO "Odd"."Stock Levels" VALUES ('a', 12);
`

const earlyPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
  - name: '"Odd"."Stock Levels"'
    epoch_column: '"Fence Epoch"'
`

// earlyDB returns a raw and a fenced handle on a database seeded with
// inventory rows at epochs 5 (a), 9 (b) and 0 (c).
func earlyDB(t *testing.T) (raw, fenced *sql.DB, pol *sqlfence.Policy) {
	t.Helper()
	dsn, raw := newRawDB(t, earlySchema)
	pol, err := sqlfence.ParsePolicy([]byte(earlyPolicy), "early.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fenced = sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	t.Cleanup(func() { fenced.Close() })
	return raw, fenced, pol
}

func TestEarlyCheckSuperseded(t *testing.T) {
	t.Parallel()
	raw, fenced, pol := earlyDB(t)
	for _, db := range []*sql.DB{raw, fenced} {
		ctx := sqlfence.WithEpoch(context.Background(), 7)
		for _, c := range []struct {
			where  string
			args   []any
			stored int64 // 0: not superseded
		}{
			{"sku = $1", []any{"a"}, 0}, // epoch 5: older than ours
			{"sku = $1", []any{"b"}, 9}, // epoch 9: a newer claim wrote it
			{"sku = ANY($1)", []any{[]string{"a", "c"}}, 0},
			{"sku = ANY($1)", []any{[]string{"a", "b"}}, 9},
			{"sku = $1", []any{"nope"}, 0}, // no row: nothing to be superseded on
			{"", nil, 9},                   // the whole table
			{"sku = 'a' -- a trailing comment", nil, 0},
		} {
			err := sqlfence.CheckSuperseded(ctx, db, pol, "inventory", c.where, c.args...)
			if c.stored == 0 {
				if err != nil {
					t.Errorf("where %q %v: %v, want not superseded", c.where, c.args, err)
				}
				continue
			}
			var fe *sqlfence.Error
			if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) {
				t.Errorf("where %q %v: err = %v, want ErrFenced", c.where, c.args, err)
				continue
			}
			if fe.Epoch != 7 || fe.StoredEpoch != c.stored || !fe.HasStored || fe.Table != "inventory" {
				t.Errorf("where %q: error %+v, want table inventory, epoch 7, stored %d", c.where, fe, c.stored)
			}
			if !strings.Contains(err.Error(), "stop the handler") {
				t.Errorf("the error does not say what to do: %v", err)
			}
		}
	}
	// The same epoch is this execution's own earlier write, not a newer claim.
	if err := sqlfence.CheckSuperseded(sqlfence.WithEpoch(context.Background(), 9), raw, pol, "inventory", "sku = $1", "b"); err != nil {
		t.Errorf("own epoch: %v", err)
	}
}

// TestEarlyCheckCancelsHandler: superseded, the check stops the handler the
// way a fenced write does, through the cancel function given to OnFenced.
func TestEarlyCheckCancelsHandler(t *testing.T) {
	t.Parallel()
	raw, _, pol := earlyDB(t)
	base, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx := sqlfence.OnFenced(sqlfence.WithEpoch(base, 7), cancel)
	if err := sqlfence.CheckSuperseded(ctx, raw, pol, "inventory", "sku = $1", "a"); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("a check that found nothing cancelled the handler")
	}
	err := sqlfence.CheckSuperseded(ctx, raw, pol, "inventory", "sku = $1", "b")
	if !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("err = %v, want ErrFenced", err)
	}
	if cause := context.Cause(ctx); cause != err {
		t.Fatalf("handler cause = %v, want the check's error", cause)
	}
}

func TestEarlyCheckEpochColumnAndNames(t *testing.T) {
	t.Parallel()
	raw, _, pol := earlyDB(t)
	ctx := sqlfence.WithEpoch(context.Background(), 10)
	// The policy's own epoch column for the table, both names needing quotes.
	err := sqlfence.CheckSuperseded(ctx, raw, pol, `"Odd"."Stock Levels"`, "sku = $1", "a")
	var fe *sqlfence.Error
	if !errors.As(err, &fe) || fe.StoredEpoch != 12 {
		t.Fatalf("err = %v, want fenced by stored epoch 12 in \"Fence Epoch\"", err)
	}
	// Without a policy the default column is used.
	if err := sqlfence.CheckSuperseded(ctx, raw, nil, "inventory", "sku = $1", "b"); err != nil {
		t.Fatalf("nil policy: %v", err)
	}
	for _, c := range []struct{ table, want string }{
		{"audit", "not protected by policy early.yaml"},
		{"a.b.c", "bad table name"},
		{`inventory"`, "bad table name"},
		{"inventory; DROP TABLE inventory", "bad table name"},
	} {
		if err := sqlfence.CheckSuperseded(ctx, raw, pol, c.table, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("table %q: err = %v, want it to mention %q", c.table, err, c.want)
		}
	}
	// An unknown column is the server's error, passed through.
	if err := sqlfence.CheckSuperseded(ctx, raw, pol, "inventory", "nope = 1"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("bad where: err = %v", err)
	}
	// A second statement smuggled into where never runs.
	err = sqlfence.CheckSuperseded(ctx, raw, pol, "inventory", "true); DELETE FROM inventory; SELECT (1")
	if err == nil {
		t.Error("a multi-statement where was accepted")
	}
	var n int
	if raw.QueryRow(`SELECT count(*) FROM inventory`).Scan(&n); n != 3 {
		t.Fatalf("inventory has %d rows after the smuggled DELETE, want 3", n)
	}
}

func TestEarlyCheckWithoutEpoch(t *testing.T) {
	t.Parallel()
	raw, _, pol := earlyDB(t)
	err := sqlfence.CheckSuperseded(context.Background(), raw, pol, "inventory", "")
	if !errors.Is(err, sqlfence.ErrUnfenced) || !strings.Contains(err.Error(), "WithEpoch") {
		t.Fatalf("no epoch: err = %v, want ErrUnfenced saying how to give one", err)
	}
	err = sqlfence.CheckSuperseded(sqlfence.WithEpoch(context.Background(), -3), raw, pol, "inventory", "")
	var fe *sqlfence.Error
	if !errors.As(err, &fe) || !errors.Is(err, sqlfence.ErrUnfenced) || fe.Epoch != -3 || !strings.Contains(err.Error(), "epoch -3: the context's epoch is not positive") {
		t.Fatalf("epoch -3: err = %v, want ErrUnfenced about the epoch", err)
	}
}
