// Package sqlfence is a database/sql driver for PostgreSQL that enforces fencing
// tokens on the tables a policy declares protected.
//
// # The model
//
// A job worker that claims a job receives an epoch: a number the claim's arbiter
// increments on every claim (the claim package draws it). The worker puts it on the
// context with [WithEpoch], and every write it sends through sqlfence to a protected
// table carries it: sqlfence parses the statement, stamps the epoch into the row's
// epoch column and adds a predicate that matches only rows whose stored epoch is
// lower. A worker that was paused past its lease and replaced wakes with an old epoch;
// its writes match no row its successor wrote, and sqlfence reports [ErrFenced]
// instead of a silent lost update.
//
// Fencing orders writers and stops superseded ones. It is not concurrency control
// between two claims that are both still valid: a read-compute-write that must not
// interleave with another live claim still needs a lock or a conditional write.
//
// # Use
//
// The application changes two things: the driver name in sql.Open, and the context
// of its job handlers:
//
//	db, err := sql.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
//	ctx = sqlfence.WithEpoch(ctx, lease.Epoch) // the job's claim; lease.Context() carries it already
//	_, err = db.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, sku, n)
//
// PostgreSQL receives the application's own text with the fence inserted, the epoch
// as one more parameter:
//
//	UPDATE inventory SET quantity = quantity - $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
//
// To wrap a connector of your own (a configured pgx connector, lib/pq, a test fake),
// parse the policy with [LoadPolicy] or [ParsePolicy] and use [NewConnector].
//
// # Results
//
// Statements that do not write a protected table are sent byte for byte. A write to a
// protected table without an epoch fails with [ErrUnfenced], so a forgotten code path
// fails in CI rather than in production; a write sqlfence cannot fence (TRUNCATE, COPY
// FROM, a shape it does not understand) fails with [ErrRefused] and is never sent. A
// fenced write that matched only rows a newer epoch wrote fails with [ErrFenced]; in
// strict mode, a second write of the same row by the same epoch fails with
// [ErrAlreadyWritten]. Each is an [*Error] carrying the table, the epochs, the fix and
// a stable rule code (Error.Code, "SF301"; docs/errors.md lists them).
//
// [Policy.Plan] shows what sqlfence would do with a statement without a database; the
// sqlfence command (cmd/sqlfence) lints SQL files with the same analysis.
//
// # Watching it
//
// [WithObserver] hands every decision to a function (the contrib/otel module makes
// OpenTelemetry metrics and span events of them). Under `enforce: shadow` statements
// are sent as written and the connector counts what enforcement would have done, per
// rule code and statement shape: [ShadowReportOf], and a periodic summary through the
// connector's logger.
package sqlfence
