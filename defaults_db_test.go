package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// flipText is a plain read with standard_conforming_strings on, and with it off a
// data-modifying WITH that zeroes every row's quantity without an epoch.
const flipText = `WITH a AS (SELECT 'x\', ' AS s), u AS (UPDATE inventory SET quantity = 0 RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a`

// TestResetToSessionDefaultSQL is pgxfence's TestResetToSessionDefault on the
// database/sql front: with a database default of standard_conforming_strings = off
// and an AfterConnect that sets it on, every statement that resets it — on its own,
// in a multi-statement text before a text that reads differently with it off, in a
// transaction — is refused (SF405) before anything is sent, on the data; with the
// setting in the startup parameters they pass.
func TestResetToSessionDefaultSQL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := pgtest.NewDB(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO inventory VALUES ('a', 10, 5), ('b', 20, 5)`,
		fmt.Sprintf(`ALTER DATABASE %q SET standard_conforming_strings = off`, cfg.Database),
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	state := func() string {
		var s string
		if err := raw.QueryRowContext(ctx, `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	p, err := sqlfence.ParsePolicy([]byte("version: 1\ntables:\n  - name: inventory\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, startup := range []bool{false, true} {
		c := cfg.Copy()
		var opts []stdlib.OptionOpenDB
		if startup {
			c.RuntimeParams["standard_conforming_strings"] = "on"
		} else {
			opts = append(opts, stdlib.OptionAfterConnect(func(ctx context.Context, c *pgx.Conn) error {
				_, err := c.Exec(ctx, `SET standard_conforming_strings = on`)
				return err
			}))
		}
		db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*c, opts...), p))
		defer db.Close()
		for _, reset := range []string{`RESET ALL`, `DISCARD ALL`, `RESET standard_conforming_strings`, `SET standard_conforming_strings TO DEFAULT`, `SET LOCAL standard_conforming_strings TO DEFAULT`} {
			for _, how := range []string{"alone", "text", "transaction", "prepared"} {
				name := fmt.Sprintf("startup %v/%s/%s", startup, reset, how)
				ectx := sqlfence.WithEpoch(ctx, 9)
				switch how {
				case "alone":
					_, err = db.ExecContext(ectx, reset)
				case "text":
					_, err = db.ExecContext(ectx, reset+"; "+flipText)
				case "transaction":
					var tx *sql.Tx
					if tx, err = db.BeginTx(ectx, nil); err != nil {
						t.Fatal(err)
					}
					if _, err = tx.ExecContext(ectx, reset); err == nil {
						_, err = tx.ExecContext(ectx, flipText)
					}
					tx.Rollback()
				case "prepared":
					var st *sql.Stmt
					if st, err = db.PrepareContext(ectx, reset); err == nil {
						_, err = st.ExecContext(ectx)
						st.Close()
					}
				}
				var se *sqlfence.Error
				refused := errors.As(err, &se)
				if startup && refused {
					t.Fatalf("%s: refused with the default on: %v", name, err)
				}
				if !startup && (!refused || se.Code != rulecode.Setting || !strings.Contains(se.Error(), "default, off")) {
					t.Fatalf("%s: %v, want %s naming the default", name, err, rulecode.Setting)
				}
				if got := state(); got != "a:10:5 b:20:5" {
					t.Fatalf("%s: rows changed: %s", name, got)
				}
			}
		}
	}
}
