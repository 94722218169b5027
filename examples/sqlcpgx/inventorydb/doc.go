// Package inventorydb is what sqlc generates for ../schema.sql and ../query.sql
// with sql_package: pgx/v5, run through pgxfence: the generated code needs no
// change; New accepts a *pgxfence.Pool, a *pgxfence.Conn or the pgx.Tx they begin,
// and the context carries the epoch. See inventorydb_test.go.
package inventorydb
