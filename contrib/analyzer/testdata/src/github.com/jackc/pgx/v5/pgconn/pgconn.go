// Package pgconn is a stub of pgx's pgconn for the analyzer's tests.
package pgconn

type CommandTag struct{ s string }
