package pgxfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// TestDefaultChangedAfterConnect checks what reading the defaults at connect rests
// on: a database default changed by another session after this one connected is
// not this session's default (PostgreSQL applies database and role defaults at
// login only), so its RESET ALL returns standard_conforming_strings to on and the
// text after it reads as sqlfence parsed it; a session that connects after the
// change has the new default, and its RESET ALL is refused (SF405). Judged on the
// data, with no, a stale and a fresh epoch.
func TestDefaultChangedAfterConnect(t *testing.T) {
	t.Parallel()
	p := policy(t, "")
	const want = "a:10:5 b:20:5"
	f := newFixture(t)
	cfg := f.poolConfig(t, pgx.QueryExecModeExec).ConnConfig
	open := func() *pgxfence.Conn {
		ctx := timeout(t, context.Background())
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `SET standard_conforming_strings = on`); err != nil { // an AfterConnect
			t.Fatal(err)
		}
		fc, err := pgxfence.NewConn(c, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fc.Close(context.Background()) })
		if _, err := fc.Exec(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
		return fc
	}
	before := open()
	f.exec(t, fmt.Sprintf(`ALTER DATABASE %q SET standard_conforming_strings = off`, cfg.Database))
	after := open()
	for _, epoch := range []int64{0, 3, 5, 9} {
		ctx := timeout(t, context.Background())
		if epoch != 0 {
			ctx = sqlfence.WithEpoch(ctx, epoch)
		}
		if _, err := before.Exec(ctx, `RESET ALL; `+flipText); isSqlfence(err) {
			t.Fatalf("epoch %d: the session connected before the change refused: %v", epoch, err)
		}
		var v string
		if err := before.QueryRow(ctx, `SHOW standard_conforming_strings`).Scan(&v); err != nil || v != "on" {
			t.Fatalf("epoch %d: after RESET ALL the earlier session has %q (%v), want on", epoch, v, err)
		}
		_, err := after.Exec(ctx, `RESET ALL; `+flipText)
		var se *sqlfence.Error
		if !errors.As(err, &se) || se.Code != rulecode.Setting || !strings.Contains(se.Error(), "default, off") {
			t.Fatalf("epoch %d: the session connected after the change: %v, want %s naming the default", epoch, err, rulecode.Setting)
		}
		if got := f.state(t, inventoryState); got != want {
			t.Fatalf("epoch %d: rows changed: %s", epoch, got)
		}
	}
}
