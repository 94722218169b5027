package sqlfencegorm_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/sqlfence/sqlfence"
	sqlfencegorm "github.com/sqlfence/sqlfence/contrib/gorm"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Item is a model of the protected table inventory with a field for its epoch column.
type Item struct {
	SKU         string `gorm:"primaryKey"`
	Quantity    int
	WriterEpoch int64 `gorm:"not null;default:0"`
}

func (Item) TableName() string { return "inventory" }

// ReadOnlyItem carries the epoch as a read-only field.
type ReadOnlyItem struct {
	SKU         string `gorm:"primaryKey"`
	Quantity    int
	WriterEpoch int64 `gorm:"->"`
}

func (ReadOnlyItem) TableName() string { return "inventory" }

const (
	schema = `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 5)`
	policyText = "version: 1\ncatalog_refresh: 1h\nmode: strict\ntables: [inventory]\n"
	state      = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`
	seeded     = "a:10:5 b:20:5"
)

type fixture struct {
	gorm *gorm.DB
	raw  *sql.DB
}

// open returns a GORM handle over sqlfence on a fresh database (set up with setup
// through plain pgx), with the plugin unless plain, and a plain pgx handle to inspect
// the data.
func open(t *testing.T, policyText, setup string, plain bool, cfg *gorm.Config) *fixture {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if setup != "" {
		if _, err := raw.Exec(setup); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(path, []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}
	policy, err := sqlfence.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	sqlDB, err := sql.Open("sqlfence", dsn+sep+"sqlfence_policy="+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	if cfg == nil {
		cfg = &gorm.Config{}
	}
	cfg.Logger = logger.Discard
	db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !plain {
		if err := db.Use(sqlfencegorm.New(policy)); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{gorm: db, raw: raw}
}

func (f *fixture) state(t *testing.T) string {
	t.Helper()
	var s sql.NullString
	if err := f.raw.QueryRow(state).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s.String
}

// TestWrites runs each GORM write on the protected table with a stale epoch (3, below
// the stored 5), a fresh one (7) and none, and judges it on the data.
func TestWrites(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		write        func(db *gorm.DB, item *Item) error
		stale, fresh string // the table afterwards
		staleErr     error
		epochField   bool // the model's epoch field is set after a successful write
	}{
		{name: "create",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "c", Quantity: 1}
				return db.Create(item).Error
			},
			stale: "a:10:5 b:20:5 c:1:3", fresh: "a:10:5 b:20:5 c:1:7", epochField: true},
		{name: "create batch",
			write: func(db *gorm.DB, item *Item) error {
				items := []Item{{SKU: "c", Quantity: 1}, {SKU: "d", Quantity: 2}}
				err := db.Create(&items).Error
				*item = items[1]
				return err
			},
			stale: "a:10:5 b:20:5 c:1:3 d:2:3", fresh: "a:10:5 b:20:5 c:1:7 d:2:7", epochField: true},
		{name: "save existing",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "a", Quantity: 11, WriterEpoch: 5}
				return db.Save(item).Error
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:11:7 b:20:5", epochField: true},
		{name: "save new",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "c", Quantity: 3}
				return db.Save(item).Error
			},
			stale: "a:10:5 b:20:5 c:3:3", fresh: "a:10:5 b:20:5 c:3:7", epochField: true},
		{name: "updates struct",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "a", WriterEpoch: 5}
				return db.Model(item).Updates(Item{Quantity: 12, WriterEpoch: 99}).Error
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:12:7 b:20:5", epochField: true},
		{name: "updates map with the epoch",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "a"}
				return db.Model(item).Updates(map[string]any{"quantity": 13, "writer_epoch": 99}).Error
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:13:7 b:20:5", epochField: true},
		{name: "update column expression",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "b"}
				return db.Model(item).Update("quantity", gorm.Expr("quantity - ?", 1)).Error
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:10:5 b:19:7", epochField: true},
		{name: "delete",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "a"}
				return db.Delete(item).Error
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "b:20:5"},
		{name: "upsert do updates",
			write: func(db *gorm.DB, item *Item) error {
				*item = Item{SKU: "a", Quantity: 14, WriterEpoch: 1}
				return db.Clauses(clause.OnConflict{
					Columns:   []clause.Column{{Name: "sku"}},
					DoUpdates: clause.AssignmentColumns([]string{"quantity", "writer_epoch"}),
				}).Create(item).Error
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:14:7 b:20:5", epochField: true},
		{name: "upsert update all, batch",
			write: func(db *gorm.DB, item *Item) error {
				items := []Item{{SKU: "a", Quantity: 15}, {SKU: "c", Quantity: 3}}
				err := db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&items).Error
				*item = items[0]
				return err
			},
			// a stale upsert inserts the new row and is fenced on the existing one: no error
			// without exact accounting, and the fields are left alone
			stale: "a:10:5 b:20:5 c:3:3", fresh: "a:15:7 b:20:5 c:3:7", epochField: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, run := range []struct {
				name  string
				epoch int64 // 0: none
			}{{"stale", 3}, {"fresh", 7}, {"none", 0}} {
				t.Run(run.name, func(t *testing.T) {
					t.Parallel()
					f := open(t, policyText, schema, false, nil)
					ctx := context.Background()
					if run.epoch != 0 {
						ctx = sqlfence.WithEpoch(ctx, run.epoch)
					}
					var item Item
					err := c.write(f.gorm.WithContext(ctx), &item)
					got := f.state(t)
					switch run.name {
					case "stale":
						if c.staleErr == nil && err != nil || c.staleErr != nil && !errors.Is(err, c.staleErr) {
							t.Fatalf("err = %v, want %v", err, c.staleErr)
						}
						if got != c.stale {
							t.Errorf("table %q, want %q", got, c.stale)
						}
						if err == nil && c.epochField && c.name != "upsert update all, batch" && item.WriterEpoch != 3 {
							t.Errorf("epoch field %d, want 3", item.WriterEpoch)
						}
						if c.name == "upsert update all, batch" && item.WriterEpoch != 0 {
							t.Errorf("partly fenced batch: epoch field %d, want it left at 0", item.WriterEpoch)
						}
					case "fresh":
						if err != nil {
							t.Fatal(err)
						}
						if got != c.fresh {
							t.Errorf("table %q, want %q", got, c.fresh)
						}
						if c.epochField && item.WriterEpoch != 7 {
							t.Errorf("epoch field %d, want 7", item.WriterEpoch)
						}
					case "none":
						if !errors.Is(err, sqlfence.ErrUnfenced) {
							t.Fatalf("err = %v, want ErrUnfenced", err)
						}
						if got != seeded {
							t.Errorf("table %q, want it unchanged", got)
						}
					}
				})
			}
		})
	}
}

// TestUpsertTwice: the same upsert twice under one epoch in strict mode is "already
// written", not a fence, and does not cancel the handler.
func TestUpsertTwice(t *testing.T) {
	t.Parallel()
	f := open(t, policyText, schema, false, nil)
	hctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	db := f.gorm.WithContext(sqlfence.OnFenced(sqlfence.WithEpoch(hctx, 7), cancel))
	upsert := clause.OnConflict{Columns: []clause.Column{{Name: "sku"}}, DoUpdates: clause.AssignmentColumns([]string{"quantity"})}
	if err := db.Clauses(upsert).Create(&Item{SKU: "a", Quantity: 1}).Error; err != nil {
		t.Fatal(err)
	}
	err := db.Clauses(upsert).Create(&Item{SKU: "a", Quantity: 2}).Error
	if !errors.Is(err, sqlfence.ErrAlreadyWritten) || errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("err = %v, want ErrAlreadyWritten", err)
	}
	if hctx.Err() != nil {
		t.Fatalf("handler cancelled: %v", context.Cause(hctx))
	}
	if got := f.state(t); got != "a:1:7 b:20:5" {
		t.Fatalf("table %q", got)
	}
}

// TestErrors: sqlfence's errors come through db.Error, translated or not, and out of
// db.Transaction.
func TestErrors(t *testing.T) {
	t.Parallel()
	for _, translate := range []bool{false, true} {
		f := open(t, policyText, schema, false, &gorm.Config{TranslateError: translate})
		stale := f.gorm.WithContext(sqlfence.WithEpoch(context.Background(), 3))
		err := stale.Model(&Item{SKU: "a"}).Update("quantity", 1).Error
		var fe *sqlfence.Error
		if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.StoredEpoch != 5 || fe.Table != "inventory" {
			t.Errorf("TranslateError %v: err = %#v", translate, err)
		}
		err = stale.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&Item{SKU: "z", Quantity: 1}).Error; err != nil {
				return err
			}
			return tx.Delete(&Item{SKU: "b"}).Error
		})
		if !errors.Is(err, sqlfence.ErrFenced) {
			t.Errorf("TranslateError %v: transaction err = %v", translate, err)
		}
		if got := f.state(t); got != seeded {
			t.Errorf("the fenced transaction left %q", got)
		}
		// A server error is still GORM's to translate.
		err = f.gorm.WithContext(sqlfence.WithEpoch(context.Background(), 7)).Create(&Item{SKU: "a", Quantity: 1}).Error
		if translate && !errors.Is(err, gorm.ErrDuplicatedKey) || !translate && err == nil {
			t.Errorf("TranslateError %v: duplicate key err = %v", translate, err)
		}
	}
}

// TestReadOnlyField: an epoch field tagged `gorm:"->"` is read back after writes too.
func TestReadOnlyField(t *testing.T) {
	t.Parallel()
	f := open(t, policyText, schema, false, nil)
	db := f.gorm.WithContext(sqlfence.WithEpoch(context.Background(), 7))
	item := ReadOnlyItem{SKU: "c", Quantity: 1}
	if err := db.Create(&item).Error; err != nil {
		t.Fatal(err)
	}
	if item.WriterEpoch != 7 {
		t.Fatalf("epoch field %d after Create, want 7", item.WriterEpoch)
	}
	var read ReadOnlyItem
	if err := db.First(&read, "sku = ?", "c").Error; err != nil || read.WriterEpoch != 7 {
		t.Fatalf("read back %+v, %v", read, err)
	}
}

// TestWithoutPlugin: without the plugin, a model that writes the epoch column is
// refused, and the message names the plugin.
func TestWithoutPlugin(t *testing.T) {
	t.Parallel()
	f := open(t, policyText, schema, true, nil)
	err := f.gorm.WithContext(sqlfence.WithEpoch(context.Background(), 7)).Create(&Item{SKU: "c", Quantity: 1}).Error
	if !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), "sqlfencegorm.New(policy)") {
		t.Fatalf("err = %v, want a refusal naming the plugin", err)
	}
	if got := f.state(t); got != seeded {
		t.Fatalf("table %q", got)
	}
}

// TestAutoMigrate: AutoMigrate of a model whose table is protected runs through the
// fenced handle under `ddl: allow`, and is refused with a message that says so under
// the default `ddl: deny`. The table does not exist before AutoMigrate creates it,
// and under resolve: catalog a connector whose protected table is missing runs no
// statement (SF520): creating the protected tables through the fenced handle needs
// resolve: none.
func TestAutoMigrate(t *testing.T) {
	t.Parallel()
	const policyText = "version: 1\nmode: strict\ntables: [inventory]\nresolve: none\n"
	t.Run("ddl allow", func(t *testing.T) {
		t.Parallel()
		f := open(t, policyText+"ddl: allow\n", "", false, nil)
		if err := f.gorm.AutoMigrate(&Item{}); err != nil {
			t.Fatal(err)
		}
		// Migrating again (the table exists now) is fine too.
		if err := f.gorm.AutoMigrate(&Item{}); err != nil {
			t.Fatal(err)
		}
		db := f.gorm.WithContext(sqlfence.WithEpoch(context.Background(), 4))
		if err := db.Create(&Item{SKU: "a", Quantity: 1}).Error; err != nil {
			t.Fatal(err)
		}
		stale := f.gorm.WithContext(sqlfence.WithEpoch(context.Background(), 3))
		if err := stale.Save(&Item{SKU: "a", Quantity: 2}).Error; !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("stale save: %v", err)
		}
		if got := f.state(t); got != "a:1:4" {
			t.Fatalf("table %q", got)
		}
		var typ, nullable string
		if err := f.raw.QueryRow(`SELECT data_type, is_nullable FROM information_schema.columns WHERE table_name = 'inventory' AND column_name = 'writer_epoch'`).Scan(&typ, &nullable); err != nil {
			t.Fatal(err)
		}
		if typ != "bigint" || nullable != "NO" {
			t.Fatalf("writer_epoch is %s, nullable %s; want bigint NOT NULL", typ, nullable)
		}
	})
	t.Run("ddl deny", func(t *testing.T) {
		t.Parallel()
		f := open(t, policyText, "", false, nil)
		err := f.gorm.AutoMigrate(&Item{})
		if !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), "ddl: allow") {
			t.Fatalf("err = %v, want a refusal that names ddl: allow", err)
		}
	})
}

// TestExactAccounting: a batch upsert fenced on some rows reports it under
// sqlfence.WithExactAccounting, with the counts.
func TestExactAccounting(t *testing.T) {
	t.Parallel()
	f := open(t, policyText, schema, false, nil)
	if _, err := f.raw.Exec(`UPDATE inventory SET writer_epoch = 9 WHERE sku = 'b'`); err != nil {
		t.Fatal(err)
	}
	ctx := sqlfence.WithExactAccounting(sqlfence.WithEpoch(context.Background(), 7))
	items := []Item{{SKU: "a", Quantity: 1}, {SKU: "b", Quantity: 2}, {SKU: "c", Quantity: 3}}
	err := f.gorm.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&items).Error
	var fe *sqlfence.Error
	if !errors.As(err, &fe) || !errors.Is(err, sqlfence.ErrFenced) || fe.Affected != 2 || fe.Fenced != 1 {
		t.Fatalf("err = %v, want ErrFenced with 2 rows written and 1 fenced", err)
	}
	// GORM's transaction rolled the batch back.
	if got := f.state(t); got != "a:10:5 b:20:9" {
		t.Fatalf("table %q", got)
	}
}
