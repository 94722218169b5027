package pgtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestNewDBIsolation(t *testing.T) {
	t.Parallel()
	a, b := NewDB(t), NewDB(t)
	if a == b {
		t.Fatalf("NewDB returned %q twice", a)
	}
	if _, err := connect(t, a).Exec(t.Context(), "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	var found bool
	if err := connect(t, b).QueryRow(t.Context(), "SELECT to_regclass('only_in_a') IS NOT NULL").Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Error("table created in one NewDB database is visible in another")
	}
}

func TestNewDBParallel(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			// The same table name everywhere collides unless the databases
			// really are separate.
			if _, err := connect(t, NewDB(t)).Exec(t.Context(), "CREATE TABLE t (id int)"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewDBDropsDatabase(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		connect(t, NewDB(t)).QueryRow(t.Context(), "SELECT current_database()").Scan(&name)
	})
	var exists bool
	err := connect(t, AdminDSN(t)).QueryRow(t.Context(), "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil || name == "" || exists {
		t.Errorf("database %q exists after its test ended: %v, %v", name, exists, err)
	}
}

func TestAdminDSNFromEnv(t *testing.T) {
	// A keyword/value DSN also exercises the non-URL path of CreateDatabase.
	var port uint16
	if cfg, err := pgx.ParseConfig(AdminDSN(t)); err != nil {
		t.Fatal(err)
	} else {
		port = cfg.Port
	}
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable application_name=from_env", port)
	t.Setenv(EnvDSN, dsn)
	if got := AdminDSN(t); got != dsn {
		t.Fatalf("AdminDSN() = %q; want %q from %s", got, dsn, EnvDSN)
	}
	var app string
	if err := connect(t, NewDB(t)).QueryRow(t.Context(), "SHOW application_name").Scan(&app); err != nil || app != "from_env" {
		t.Errorf("application_name = %q, %v; want settings of %s kept", app, err, EnvDSN)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&application_name=app",
		"postgresql://postgres@127.0.0.1:5432?application_name=app&sslmode=disable",
		"postgres://postgres@127.0.0.1:5432/postgres?dbname=other&sslmode=disable&application_name=app",
		"host=127.0.0.1 port=5432 user=postgres dbname=postgres sslmode=disable application_name=app",
	} {
		got, err := withDatabase(dsn, "fresh")
		if err != nil {
			t.Errorf("withDatabase(%q): %v", dsn, err)
			continue
		}
		cfg, err := pgx.ParseConfig(got)
		if err != nil {
			t.Errorf("withDatabase(%q) = %q: %v", dsn, got, err)
			continue
		}
		if cfg.Database != "fresh" || cfg.Host != "127.0.0.1" || cfg.Port != 5432 || cfg.User != "postgres" ||
			cfg.TLSConfig != nil || cfg.RuntimeParams["application_name"] != "app" {
			t.Errorf("withDatabase(%q) = %q, which does not keep everything but the database name", dsn, got)
		}
	}
}
