// The rows of a fenced write with RETURNING: an empty result is explained like a
// write that affected no rows, every Rows interface of the inner driver kept.

package sqlfence

import (
	"database/sql/driver"
	"io"
	"reflect"
)

// fencedRows carries the result of a fenced write with RETURNING. A fenced write
// returns no rows, which looks like success to a caller reading rows; fencedRows turns
// that end into the fence error, which database/sql reports from rows.Err(). It
// counts the rows, so that exact accounting explains a result in which some rows
// were fenced (a multi-row upsert through Query) as Exec does.
type fencedRows struct {
	inner   driver.Rows
	explain func(returned int64) error // at the end of the rows, once
	n       int64
	// translate, for a claim-checked write, turns the server's refusal of a
	// superseded claim's row (a NULL epoch) into ErrFenced.
	translate func(error) error
	seen      bool
}

var (
	_ driver.Rows                           = (*fencedRows)(nil)
	_ driver.RowsNextResultSet              = (*fencedRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*fencedRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*fencedRows)(nil)
	_ driver.RowsColumnTypeLength           = (*fencedRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*fencedRows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*fencedRows)(nil)
)

func (r *fencedRows) Columns() []string { return r.inner.Columns() }
func (r *fencedRows) Close() error      { return r.inner.Close() }

func (r *fencedRows) Next(dest []driver.Value) error {
	err := r.inner.Next(dest)
	if err == nil {
		r.n++
		return nil
	}
	if err == io.EOF && !r.seen {
		r.seen = true // explain once
		if ferr := r.explain(r.n); ferr != nil {
			return ferr
		}
	}
	if err != io.EOF && r.translate != nil {
		return r.translate(err)
	}
	return err
}

func (r *fencedRows) HasNextResultSet() bool {
	if n, ok := r.inner.(driver.RowsNextResultSet); ok {
		return n.HasNextResultSet()
	}
	return false
}

func (r *fencedRows) NextResultSet() error {
	if n, ok := r.inner.(driver.RowsNextResultSet); ok {
		return n.NextResultSet()
	}
	return io.EOF
}

func (r *fencedRows) ColumnTypeScanType(i int) reflect.Type {
	if c, ok := r.inner.(driver.RowsColumnTypeScanType); ok {
		return c.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *fencedRows) ColumnTypeDatabaseTypeName(i int) string {
	if c, ok := r.inner.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return c.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *fencedRows) ColumnTypeLength(i int) (int64, bool) {
	if c, ok := r.inner.(driver.RowsColumnTypeLength); ok {
		return c.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *fencedRows) ColumnTypeNullable(i int) (bool, bool) {
	if c, ok := r.inner.(driver.RowsColumnTypeNullable); ok {
		return c.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *fencedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if c, ok := r.inner.(driver.RowsColumnTypePrecisionScale); ok {
		return c.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
