// sqlfence's own queries on an inner connection of the database/sql front: the
// catalog reads, the checks after a write, as the engine's Querier.

package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// queryerQuerier runs the engine's catalog reads on an inner connection.
func queryerQuerier(q driver.QueryerContext) engine.Querier {
	return func(ctx context.Context, sql string, args ...any) ([][]any, error) {
		return queryAll(ctx, q, sql, args...)
	}
}

// queryAll runs query on the inner connection and returns every row.
func queryAll(ctx context.Context, q driver.QueryerContext, query string, args ...any) ([][]any, error) {
	rows, err := q.QueryContext(ctx, query, ownArgs(q, args))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return readAll(rows)
}

// readAll reads every row of rows.
func readAll(rows driver.Rows) ([][]any, error) {
	var out [][]any
	for {
		row := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(row); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		vals := make([]any, len(row))
		for i, v := range row {
			vals[i] = v
		}
		out = append(out, vals)
	}
}

// queryConn runs a query on the inner connection, through QueryerContext when it has
// one and through a prepared statement otherwise, so that classification does not
// depend on an optional interface.
func queryConn(ctx context.Context, c driver.Conn, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.(driver.QueryerContext); ok {
		rows, err := q.QueryContext(ctx, query, extendedArgs(c, args))
		if !errors.Is(err, driver.ErrSkip) {
			return rows, err
		}
	}
	var (
		st  driver.Stmt
		err error
	)
	if p, ok := c.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	var rows driver.Rows
	if sq, ok := st.(driver.StmtQueryContext); ok {
		rows, err = sq.QueryContext(ctx, args)
	} else {
		//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
		rows, err = st.Query(values(args))
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return &stmtRows{Rows: rows, stmt: st}, nil
}

// stmtRows closes the statement a query was prepared for along with its rows.
type stmtRows struct {
	driver.Rows
	stmt driver.Stmt
}

func (r *stmtRows) Close() error {
	err := r.Rows.Close()
	if cerr := r.stmt.Close(); err == nil {
		err = cerr
	}
	return err
}

// ownArgs are the arguments of one of sqlfence's own queries (the catalog reads, the
// checks after a write) on q. On pgx they are led by QueryExecModeExec: each query is
// one round trip on the unnamed statement. In pgx's default mode each would be
// prepared first, a second round trip, and kept in the connection's statement cache
// for the connection's life, though the catalog is read once per snapshot and a check
// runs only after an unusual result; and the simple protocol would splice the
// arguments into the text.
func ownArgs(q any, args []any) []driver.NamedValue {
	lead := 0
	if _, ok := q.(interface{ Conn() *pgx.Conn }); ok {
		lead = 1
	}
	named := make([]driver.NamedValue, lead+len(args))
	if lead == 1 {
		named[0] = driver.NamedValue{Value: pgx.QueryExecModeExec}
	}
	for i, a := range args {
		named[lead+i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return named
}

// connQuerier runs the engine's queries on the inner connection.
func connQuerier(c driver.Conn) engine.Querier {
	if q, ok := c.(driver.QueryerContext); ok {
		if _, ok := c.(interface{ Conn() *pgx.Conn }); ok {
			return queryerQuerier(q)
		}
	}
	return func(ctx context.Context, sql string, args ...any) ([][]any, error) {
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := queryConn(ctx, c, sql, named)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		return readAll(rows)
	}
}
