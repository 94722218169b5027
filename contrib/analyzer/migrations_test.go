package analyzer_test

// -migrations: the schema given as migration files, applied to an empty scratch
// database in a transaction that is rolled back.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/sqlfence/sqlfence/contrib/analyzer"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// writeMigrations writes catalogSchema as the migrations of three tools' layouts:
// golang-migrate's up and down files, and goose's Up and Down halves in one file.
// Applying a down half would undo the schema and the test would see it.
func writeMigrations(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"000001_inventory.up.sql": `CREATE TABLE inventory (sku text, quantity int, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku);
CREATE TABLE inventory_a PARTITION OF inventory FOR VALUES IN ('a');`,
		"000001_inventory.down.sql": `DROP TABLE inventory;`,
		"000002_functions.sql": `-- +goose Up
CREATE FUNCTION stock_of(s text) RETURNS int LANGUAGE sql AS 'SELECT quantity FROM inventory WHERE sku = s';
-- +goose StatementBegin
CREATE FUNCTION restock_all() RETURNS void LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 100; END $$;
-- +goose StatementEnd
-- +goose Down
DROP FUNCTION stock_of(text);
DROP FUNCTION restock_all();
`,
	}
	for name, text := range extra {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMigrations: with -migrations on an empty database the statements are decided
// as TestCatalog decides them on the migrated one, and the database stays empty.
func TestMigrations(t *testing.T) {
	dsn := pgtest.NewDB(t)
	a := analyzer.New(loadPolicy(t, "testdata/catalog.yaml"))
	for flag, v := range map[string]string{"dsn": dsn, "migrations": writeMigrations(t, nil)} {
		if err := a.Flags.Set(flag, v); err != nil {
			t.Fatal(err)
		}
	}
	analysistest.Run(t, analysistest.TestData(), a, "catalogapp")

	conn := clitest.PGConnect(t, dsn, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the migrations left %d relations in the database", n)
	}
}

// TestMigrationsRefused: what -migrations refuses, each with what to do, before it
// changes anything.
func TestMigrationsRefused(t *testing.T) {
	empty := pgtest.NewDB(t)
	used := pgtest.NewDB(t)
	conn := clitest.PGConnect(t, used, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `CREATE TABLE orders (id int)`); err != nil {
		t.Fatal(err)
	}
	good := writeMigrations(t, nil)
	for _, c := range []struct {
		name, dsn, dir, want string
	}{
		{"no dsn", "", good, "-migrations needs -dsn"},
		{"a database in use", used, good, "the database has 1 relations of its own; give an empty scratch database"},
		{"a file that commits", empty, writeMigrations(t, map[string]string{"000003_tx.sql": "BEGIN; CREATE TABLE x (id int); COMMIT;"}), "000003_tx.sql controls transactions itself"},
		{"a file the server refuses", empty, writeMigrations(t, map[string]string{"000003_bad.sql": "CREATE TABLE inventory_a (id int);"}), "000003_bad.sql: ERROR: relation \"inventory_a\" already exists"},
		{"a file that does not parse", empty, writeMigrations(t, map[string]string{"000003_typo.sql": "CREAT TABLE x (id int);"}), "000003_typo.sql cannot be read"},
		{"no files", empty, t.TempDir(), "no .sql files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := analyzer.New(loadPolicy(t, "testdata/catalog.yaml"))
			for flag, v := range map[string]string{"dsn": c.dsn, "migrations": c.dir} {
				if err := a.Flags.Set(flag, v); err != nil {
					t.Fatal(err)
				}
			}
			_, err := a.Run(nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to say %q", err, c.want)
			}
		})
	}
	var n int
	if err := clitest.PGConnect(t, empty, nil).QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('x', 'inventory')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a refused run left %d relations behind", n)
	}
}
