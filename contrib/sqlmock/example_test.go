package sqlfencemock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/sqlfence/sqlfence"
	sqlfencemock "github.com/sqlfence/sqlfence/contrib/sqlmock"
)

// A unit test's view of a fenced write: the first run writes the row, a superseded
// run (a lower epoch) is fenced. No database, and no fenced SQL written by hand.
func Example() {
	policy, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\n"), "")
	if err != nil {
		panic(err)
	}
	db, mock, err := sqlfencemock.New(policy)
	if err != nil {
		panic(err)
	}
	defer db.Close()

	const ship = `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`
	mock.ExpectFencedExec(ship, 7, "widget", 3).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectFenced(ship, 6, 7, "widget", 3) // 0 rows; the check finds epoch 7 on the row

	ctx := context.Background()
	_, err = db.ExecContext(sqlfence.WithEpoch(ctx, 7), ship, "widget", 3)
	fmt.Println("epoch 7:", err)
	_, err = db.ExecContext(sqlfence.WithEpoch(ctx, 6), ship, "widget", 3)
	fmt.Println("epoch 6 fenced:", errors.Is(err, sqlfence.ErrFenced))
	fmt.Println("expectations met:", mock.ExpectationsWereMet() == nil)

	text, epochParam := mock.Fenced(ship)
	fmt.Printf("sent: %s\nepoch: $%d\n", text, epochParam)
	// Output:
	// epoch 7: <nil>
	// epoch 6 fenced: true
	// expectations met: true
	// sent: /*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = quantity - $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
	// epoch: $3
}
