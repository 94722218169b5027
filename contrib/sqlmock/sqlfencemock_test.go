package sqlfencemock_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/sqlfence/sqlfence"
	sqlfencemock "github.com/sqlfence/sqlfence/contrib/sqlmock"
)

const policyText = "version: 1\nmode: strict\ntables: [inventory]\n"

func newMock(t *testing.T) (*sql.DB, *sqlfencemock.Mock) {
	t.Helper()
	policy, err := sqlfence.ParsePolicy([]byte(policyText), "")
	if err != nil {
		t.Fatal(err)
	}
	db, mock, err := sqlfencemock.New(policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mock.ExpectationsWereMet(); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	return db, mock
}

func TestPaths(t *testing.T) {
	t.Parallel()
	const (
		ship   = `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`
		upsert = `INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`
	)
	ctx := context.Background()
	at := func(e int64) context.Context { return sqlfence.WithEpoch(ctx, e) }

	t.Run("written", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectFencedExec(ship, 7, "widget", 3).WillReturnResult(sqlmock.NewResult(0, 1))
		if _, err := db.ExecContext(at(7), ship, "widget", 3); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("fenced", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectFenced(ship, 6, 9, "widget", 3)
		_, err := db.ExecContext(at(6), ship, "widget", 3)
		var fe *sqlfence.Error
		if !errors.As(err, &fe) || !errors.Is(err, sqlfence.ErrFenced) || fe.StoredEpoch != 9 {
			t.Fatalf("err = %v, want ErrFenced with stored epoch 9", err)
		}
	})
	t.Run("already written", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectFenced(ship, 7, 7, "widget", 3)
		if _, err := db.ExecContext(at(7), ship, "widget", 3); !errors.Is(err, sqlfence.ErrAlreadyWritten) {
			t.Fatalf("err = %v, want ErrAlreadyWritten", err)
		}
	})
	t.Run("no match", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectFencedExec(ship, 7, "nope", 3).WillReturnResult(sqlmock.NewResult(0, 0))
		mock.ExpectCheck(ship, 7, "nope", 3).WillReturnRows(sqlfencemock.NoMatchRows())
		res, err := db.ExecContext(at(7), ship, "nope", 3)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 0 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("returning, fenced", func(t *testing.T) {
		db, mock := newMock(t)
		q := ship + ` RETURNING quantity`
		mock.ExpectFencedQuery(q, 6, "widget", 3).WillReturnRows(sqlmock.NewRows([]string{"quantity"}))
		mock.ExpectCheck(q, 6, "widget", 3).WillReturnRows(sqlfencemock.CheckRows(8, 1))
		rows, err := db.QueryContext(at(6), q, "widget", 3)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("rows.Err() = %v, want ErrFenced", err)
		}
		rows.Close()
	})
	t.Run("upsert check takes the key arguments", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectFenced(upsert, 7, 7, "a", 1, "b", 2)
		if _, err := db.ExecContext(at(7), upsert, "a", 1, "b", 2); !errors.Is(err, sqlfence.ErrAlreadyWritten) {
			t.Fatalf("err = %v, want ErrAlreadyWritten", err)
		}
	})
	t.Run("exact accounting", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectFencedExec(upsert, 7, "a", 1, "b", 2).WillReturnResult(sqlmock.NewResult(0, 1))
		mock.ExpectCheck(upsert, 7, "a", 1, "b", 2).WillReturnRows(sqlfencemock.CheckRows(9, 1))
		_, err := db.ExecContext(sqlfence.WithExactAccounting(at(7)), upsert, "a", 1, "b", 2)
		var fe *sqlfence.Error
		if !errors.As(err, &fe) || fe.Affected != 1 || fe.Fenced != 1 {
			t.Fatalf("err = %v, want ErrFenced with 1 written, 1 fenced", err)
		}
	})
	t.Run("in a transaction", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectBegin()
		mock.ExpectFencedExec(ship, 7, "widget", 3).WillReturnResult(sqlmock.NewResult(0, 1))
		mock.ExpectCommit()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(at(7), ship, "widget", 3); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unchanged statements and refusals", func(t *testing.T) {
		db, mock := newMock(t)
		mock.ExpectQuery(`SELECT quantity FROM inventory WHERE sku = $1`).WithArgs("widget").
			WillReturnRows(sqlmock.NewRows([]string{"quantity"}).AddRow(4))
		var q int
		if err := db.QueryRowContext(ctx, `SELECT quantity FROM inventory WHERE sku = $1`, "widget").Scan(&q); err != nil || q != 4 {
			t.Fatalf("read: %d, %v", q, err)
		}
		// Nothing is sent for these: no expectation.
		if _, err := db.ExecContext(ctx, ship, "widget", 3); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("no epoch: %v", err)
		}
		if _, err := db.ExecContext(at(7), `TRUNCATE inventory`); !errors.Is(err, sqlfence.ErrRefused) {
			t.Fatalf("truncate: %v", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		policy, _ := sqlfence.ParsePolicy([]byte(policyText), "")
		db, mock, err := sqlfencemock.New(policy)
		if err != nil {
			t.Fatal(err)
		}
		mock.ExpectClose()
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := mock.ExpectationsWereMet(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNewConnector(t *testing.T) {
	t.Parallel()
	// A connector made by hand gets the policy as given: a mock cannot answer the
	// catalog queries of resolve: catalog, the default.
	policy, _ := sqlfence.ParsePolicy([]byte(policyText+"resolve: none\n"), "")
	c, mock, err := sqlfencemock.NewConnector()
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(c, policy))
	defer db.Close()
	mock.ExpectExec(`/*sqlfence fenced: inventory*/ DELETE FROM inventory WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint`).
		WithArgs("widget", int64(4)).WillReturnResult(sqlmock.NewResult(0, 1))
	if _, err := db.ExecContext(sqlfence.WithEpoch(context.Background(), 4), `DELETE FROM inventory WHERE sku = $1`, "widget"); err != nil {
		t.Fatal(err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}

func TestMisuse(t *testing.T) {
	t.Parallel()
	_, mock := newMock(t)
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"read", func() { mock.ExpectFencedExec(`SELECT 1`, 7) }, "unchanged"},
		{"refused", func() { mock.ExpectFencedExec(`TRUNCATE inventory`, 7) }, "refuses"},
		{"insert has no check", func() { mock.ExpectCheck(`INSERT INTO inventory (sku) VALUES ($1)`, 7, "a") }, "no check"},
		{"too few arguments", func() { mock.ExpectCheck(`DELETE FROM inventory WHERE sku = $1`, 7) }, "argument 1"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("%s: panic %v, want it to mention %q", c.name, r, c.want)
				}
			}()
			c.f()
		}()
	}
}
