package sqlfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/nopdriver"
)

// What `enforce: shadow` would have stopped, by rule code and by statement shape. The
// inner connector here sends nothing anywhere, so the example runs without a server.
func ExampleShadowReportOf() {
	policy, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\nenforce: shadow\nresolve: none\n"), "")
	if err != nil {
		log.Fatal(err)
	}
	connector := sqlfence.NewConnector(nopdriver.Connector{}, policy, sqlfence.WithLogger(slog.New(slog.DiscardHandler)))
	db := sql.OpenDB(connector)
	defer db.Close()

	ctx := context.Background()
	for _, sku := range []string{"a", "b", "c"} {
		db.ExecContext(ctx, `UPDATE inventory SET quantity = 0 WHERE sku = '`+sku+`'`) // no epoch: one shape
	}
	db.ExecContext(sqlfence.WithEpoch(ctx, 7), `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`)
	db.ExecContext(ctx, `TRUNCATE inventory`)

	r, _ := sqlfence.ShadowReportOf(connector)
	fmt.Printf("%d statements: %d would be fenced, %d refused, %d unfenced\n", r.Statements, r.Fence, r.Refuse, r.Unfenced)
	for _, c := range r.Rules {
		fmt.Printf("%s %s: %d\n", c.Code, c.Outcome, c.Count)
	}
	top := r.Shapes[0]
	fmt.Printf("top shape: %s %s ×%d, e.g. %s\n", top.Code, top.Outcome, top.Count, top.Example)
	// Output:
	// 5 statements: 1 would be fenced, 1 refused, 3 unfenced
	// SF201 unfenced: 3
	// SF301 refuse: 1
	// top shape: SF201 unfenced ×3, e.g. UPDATE inventory SET quantity = 0 WHERE sku = 'a'
}
