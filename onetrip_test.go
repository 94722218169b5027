package sqlfence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
)

// TestOneTripWithoutArguments: a fenced statement the application sends without
// arguments (values inlined, as bun does) goes out in one round trip and leaves no
// prepared statement on the server, as it would without sqlfence — and is fenced the
// same: a stale epoch changes nothing, no epoch is refused, a fresh one writes.
func TestOneTripWithoutArguments(t *testing.T) {
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := f.fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 5 {
		q := fmt.Sprintf(`UPDATE inventory SET quantity = %d WHERE sku = 'a'`, 100+i)
		if _, err := conn.ExecContext(sqlfence.WithEpoch(ctx, 3), q); !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("stale epoch: err = %v, want ErrFenced", err)
		}
		if _, err := conn.ExecContext(ctx, q); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
		}
		res, err := conn.ExecContext(sqlfence.WithEpoch(ctx, int64(10+i)), q)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("fresh epoch: %d rows affected, want 1", n)
		}
	}
	var prepared string
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(string_agg(statement, ' | '), '') FROM pg_prepared_statements WHERE statement LIKE '%UPDATE ' || 'inventory%'`).Scan(&prepared); err != nil {
		t.Fatal(err)
	}
	if prepared != "" {
		t.Errorf("prepared statements left on the server for fenced statements sent without arguments: %s", prepared)
	}
	if got, want := f.state(t, `SELECT quantity || ' ' || writer_epoch FROM inventory WHERE sku = 'a'`), "104 14"; got != want {
		t.Errorf("row a = %q, want %q", got, want)
	}
}
