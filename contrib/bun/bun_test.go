// Tests of bun on tables sqlfence protects: the model tags, RETURNING, upserts, and
// what sqlfence says when a model writes the epoch column. No code of its own is
// needed; the bun section of docs/orms-and-queues.md is compiled by Example.
package sqlfencebun_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Item reads the epoch column back but never writes it: `scanonly`.
type Item struct {
	bun.BaseModel `bun:"table:inventory,alias:item"`

	SKU         string `bun:"sku,pk"`
	Quantity    int    `bun:"quantity,notnull"`
	WriterEpoch int64  `bun:"writer_epoch,scanonly"`
}

// PlainItem has no field for the epoch column.
type PlainItem struct {
	bun.BaseModel `bun:"table:inventory,alias:item"`

	SKU      string `bun:"sku,pk"`
	Quantity int    `bun:"quantity,notnull"`
}

// WritingItem maps the epoch column as an ordinary field, which bun writes.
type WritingItem struct {
	bun.BaseModel `bun:"table:inventory,alias:item"`

	SKU         string `bun:"sku,pk"`
	Quantity    int    `bun:"quantity,notnull"`
	WriterEpoch int64  `bun:"writer_epoch"`
}

const (
	schema = `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 5)`
	state  = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`
	seeded = "a:10:5 b:20:5"
)

func open(t *testing.T, opts ...bun.DBOption) (*bun.DB, *sql.DB) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(schema); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(path, []byte("version: 1\ncatalog_refresh: 1h\nmode: strict\ntables: [inventory]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	sqldb, err := sql.Open("sqlfence", dsn+sep+"sqlfence_policy="+path)
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sqldb, pgdialect.New(), opts...)
	t.Cleanup(func() { db.Close() })
	return db, raw
}

func current(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var s sql.NullString
	if err := raw.QueryRow(state).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s.String
}

// TestWrites runs bun's writes on the protected table with a stale epoch (3, below
// the stored 5), a fresh one (7) and none, and judges them on the data and on the
// epoch read back into the scanonly field.
func TestWrites(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		opts         []bun.DBOption
		write        func(ctx context.Context, db *bun.DB) (epochField int64, err error)
		stale, fresh string
		staleErr     error
		readsEpoch   bool // the write reads the epoch back (RETURNING)
	}{
		{name: "insert returning *",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				it := Item{SKU: "c", Quantity: 1}
				_, err := db.NewInsert().Model(&it).Returning("*").Exec(ctx)
				return it.WriterEpoch, err
			},
			stale: "a:10:5 b:20:5 c:1:3", fresh: "a:10:5 b:20:5 c:1:7", readsEpoch: true},
		{name: "bulk insert",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				its := []Item{{SKU: "c", Quantity: 1}, {SKU: "d", Quantity: 2}}
				_, err := db.NewInsert().Model(&its).Exec(ctx)
				return 0, err
			},
			stale: "a:10:5 b:20:5 c:1:3 d:2:3", fresh: "a:10:5 b:20:5 c:1:7 d:2:7"},
		{name: "update by primary key, returning *",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				it := Item{SKU: "a", Quantity: 11, WriterEpoch: 5}
				_, err := db.NewUpdate().Model(&it).WherePK().Returning("*").Exec(ctx)
				return it.WriterEpoch, err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:11:7 b:20:5", readsEpoch: true},
		{name: "update set expression",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				_, err := db.NewUpdate().Model((*Item)(nil)).Set("quantity = quantity - ?", 1).Where("sku = ?", "b").Exec(ctx)
				return 0, err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:10:5 b:19:7"},
		{name: "delete",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				_, err := db.NewDelete().Model(&Item{SKU: "a"}).WherePK().Exec(ctx)
				return 0, err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "b:20:5"},
		{name: "upsert",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				it := Item{SKU: "a", Quantity: 12}
				_, err := db.NewInsert().Model(&it).On("CONFLICT (sku) DO UPDATE").Set("quantity = EXCLUDED.quantity").Returning("*").Exec(ctx)
				return it.WriterEpoch, err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:12:7 b:20:5", readsEpoch: true},
		{name: "model without the epoch field, returning *, unknown columns discarded",
			opts: []bun.DBOption{bun.WithDiscardUnknownColumns()},
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				it := PlainItem{SKU: "a", Quantity: 13}
				_, err := db.NewUpdate().Model(&it).WherePK().Returning("*").Exec(ctx)
				return 0, err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:13:7 b:20:5"},
		{name: "model without the epoch field, returning its own columns",
			write: func(ctx context.Context, db *bun.DB) (int64, error) {
				it := PlainItem{SKU: "c", Quantity: 14}
				_, err := db.NewInsert().Model(&it).Returning("sku, quantity").Exec(ctx)
				return 0, err
			},
			stale: "a:10:5 b:20:5 c:14:3", fresh: "a:10:5 b:20:5 c:14:7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, epoch := range []int64{3, 7, 0} {
				db, raw := open(t, c.opts...)
				ctx := context.Background()
				if epoch != 0 {
					ctx = sqlfence.WithEpoch(ctx, epoch)
				}
				field, err := c.write(ctx, db)
				got := current(t, raw)
				switch epoch {
				case 3:
					if c.staleErr == nil && err != nil || c.staleErr != nil && !errors.Is(err, c.staleErr) {
						t.Errorf("stale: err = %v, want %v", err, c.staleErr)
					}
					if got != c.stale {
						t.Errorf("stale: table %q, want %q", got, c.stale)
					}
					if err == nil && c.readsEpoch && field != 3 {
						t.Errorf("stale: epoch field %d, want 3", field)
					}
				case 7:
					if err != nil {
						t.Errorf("fresh: %v", err)
					}
					if got != c.fresh {
						t.Errorf("fresh: table %q, want %q", got, c.fresh)
					}
					if c.readsEpoch && field != 7 {
						t.Errorf("fresh: epoch field %d, want 7", field)
					}
				case 0:
					if !errors.Is(err, sqlfence.ErrUnfenced) {
						t.Errorf("no epoch: err = %v, want ErrUnfenced", err)
					}
					if got != seeded {
						t.Errorf("no epoch: table %q", got)
					}
				}
			}
		})
	}
}

// TestUpsertTwice: the same upsert twice under one epoch in strict mode is "already
// written", not a fence.
func TestUpsertTwice(t *testing.T) {
	t.Parallel()
	db, raw := open(t)
	ctx := sqlfence.WithEpoch(context.Background(), 7)
	upsert := func(q int) error {
		_, err := db.NewInsert().Model(&Item{SKU: "a", Quantity: q}).On("CONFLICT (sku) DO UPDATE").Set("quantity = EXCLUDED.quantity").Exec(ctx)
		return err
	}
	if err := upsert(1); err != nil {
		t.Fatal(err)
	}
	if err := upsert(2); !errors.Is(err, sqlfence.ErrAlreadyWritten) || errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("err = %v, want ErrAlreadyWritten", err)
	}
	if got := current(t, raw); got != "a:1:7 b:20:5" {
		t.Fatalf("table %q", got)
	}
}

// TestMistakes: what a model gets wrong, and what sqlfence or bun says.
func TestMistakes(t *testing.T) {
	t.Parallel()
	ctx := sqlfence.WithEpoch(context.Background(), 7)

	// A field bun writes: refused, and the message names the tag.
	db, raw := open(t)
	_, err := db.NewInsert().Model(&WritingItem{SKU: "c", Quantity: 1}).Exec(ctx)
	if !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), `bun:",scanonly"`) {
		t.Fatalf("epoch field without scanonly: err = %v, want a refusal naming the tag", err)
	}
	if got := current(t, raw); got != seeded {
		t.Fatalf("table %q", got)
	}

	// RETURNING * into a model without the field, without WithDiscardUnknownColumns:
	// the write runs (and is fenced), and bun cannot scan the epoch column.
	_, err = db.NewInsert().Model(&PlainItem{SKU: "c", Quantity: 1}).Returning("*").Exec(ctx)
	if err == nil || !strings.Contains(err.Error(), `does not have column "writer_epoch"`) {
		t.Fatalf("RETURNING * into a model without the field: err = %v", err)
	}
}
