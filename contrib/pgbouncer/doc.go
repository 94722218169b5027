// Package pgbouncer holds no code: its tests run the sqlfence driver and the
// database-side guard through PgBouncer in transaction pooling mode, against
// the throwaway PostgreSQL cluster of internal/pgtest. They live in a module of
// their own because they need the pgbouncer binary (Debian: apt-get install -y
// pgbouncer, which .ci/run does), which the core's `go test ./...` should not
// require. The "Behind PgBouncer" section of docs/deploying.md is what they check.
package pgbouncer
