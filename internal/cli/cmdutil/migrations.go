// Migrations as the schema to decide against (sqlfence check --migrations,
// sqlfence-vet -migrations): applied to an empty scratch database inside a
// transaction that is rolled back once the catalog is read.

package cmdutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// Migration is one file's up half.
type Migration struct{ Path, SQL string }

// ReadMigrations lists the up migrations of dir in name order (golang-migrate's
// 000001_x.up.sql, goose's and dbmate's 20240101_x.sql: zero-padded or timestamped
// names sort as they apply). Down files (*.down.sql) are skipped, and a file's down
// half (from a "-- +goose Down" or "-- migrate:down" line on) is cut: applying it
// would undo the up half. A file that ends or opens transactions itself is refused
// before anything is applied: COMMIT would make the migrations stay in the database.
func ReadMigrations(dir string) ([]Migration, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []Migration
	for _, p := range paths {
		if strings.HasSuffix(p, ".down.sql") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		up := upHalf(string(data))
		// Read before anything is applied: a file that cannot be read cannot be shown
		// to leave the transaction alone.
		tree, err := pgtree.Parse(up, pgtree.Limit)
		if err != nil {
			return nil, fmt.Errorf("migration %s cannot be read (%v): fix it, or migrate a scratch database yourself and give only its DSN", p, err)
		}
		for _, s := range tree.Stmts {
			if s.Stmt.GetTransactionStmt() != nil {
				return nil, fmt.Errorf("migration %s controls transactions itself (BEGIN, COMMIT, …): the migrations are applied in one transaction that is rolled back; take those statements out, or migrate a scratch database yourself and give only its DSN", p)
			}
		}
		out = append(out, Migration{Path: p, SQL: up})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("migrations %s: no .sql files (up migrations) in the directory", dir)
	}
	return out, nil
}

// upHalf is text up to its down marker, if any.
func upHalf(text string) string {
	at := 0
	for line := range strings.Lines(text) {
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "-- +goose down", "-- migrate:down":
			return text[:at]
		}
		at += len(line)
	}
	return text
}

// userRelationsSQL counts the relations outside the system schemas: the migrations
// are applied only to a database with none.
const userRelationsSQL = `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'`

// ApplyMigrations opens a transaction on conn and applies ms in it, in order. The
// caller reads the catalog in the transaction and rolls it back: the database is left
// as it was. It must have no relations of its own, so that the migrations build the
// schema from nothing (as they do for the application) and no lock is taken on
// tables anyone uses.
func ApplyMigrations(ctx context.Context, conn *pgx.Conn, dir string, ms []Migration) error {
	var n int64
	if err := conn.QueryRow(ctx, userRelationsSQL).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("migrations: the database has %d relations of its own; give an empty scratch database (createdb sqlfence_vet): the migrations of %s are applied to it inside a transaction that is rolled back", n, dir)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return err
	}
	for _, m := range ms {
		// No arguments: pgx sends the file in one simple-protocol Query, which runs
		// every statement of it.
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrations: applying %s: %w", m.Path, err)
		}
		if conn.PgConn().TxStatus() != 'T' {
			return fmt.Errorf("migrations: %s ended the transaction the migrations are applied in", m.Path)
		}
	}
	return nil
}
