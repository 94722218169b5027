// Package sqlfencesqlx registers sqlfence's parameter style with sqlx.
//
// sqlx picks the placeholders of NamedExec, NamedQuery, In and Rebind from the driver
// name, and does not know "sqlfence": without this package it sends `?`, which
// PostgreSQL does not read as a parameter, and sqlfence refuses the statement ("the
// statement uses ? placeholders"). Importing the package registers the driver name
// with sqlx's $1, $2 style:
//
//	import _ "github.com/sqlfence/sqlfence/contrib/sqlx"
//
//	db, err := sqlx.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
//	_, err = db.NamedExecContext(sqlfence.WithEpoch(ctx, lease.Epoch),
//		`UPDATE inventory SET quantity = :quantity WHERE sku = :sku`, item)
//
// It does exactly what this line in the program's own init would:
//
//	sqlx.BindDriver("sqlfence", sqlx.DOLLAR)
//
// A handle made from sqlfence.NewConnector is wrapped with the same driver name:
// sqlx.NewDb(sql.OpenDB(connector), "sqlfence"), or [NewDb].
package sqlfencesqlx

import (
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/sqlfence/sqlfence"
)

func init() { sqlx.BindDriver(sqlfence.DriverName, sqlx.DOLLAR) }

// Open is sqlx.Open("sqlfence", dsn): the DSN names the policy as for sql.Open.
func Open(dsn string) (*sqlx.DB, error) { return sqlx.Open(sqlfence.DriverName, dsn) }

// NewDb wraps a fenced *sql.DB — sql.OpenDB(sqlfence.NewConnector(…)) — for sqlx, with
// PostgreSQL's $1, $2 placeholders.
func NewDb(db *sql.DB) *sqlx.DB { return sqlx.NewDb(db, sqlfence.DriverName) }
