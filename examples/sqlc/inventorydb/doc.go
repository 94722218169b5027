// Package inventorydb is what sqlc generates for ../schema.sql and ../query.sql
// (database/sql, PostgreSQL), run through sqlfence: the generated code needs no
// change, only a *sql.DB opened with the driver "sqlfence" and a context that
// carries the epoch. See inventorydb_test.go.
package inventorydb
