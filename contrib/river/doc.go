// Package sqlfenceriver gives River job handlers an epoch: a worker middleware
// that claims every River job execution on the arbiter through sqlfence's
// claim ledger, so that the handler's writes to protected tables are fenced.
//
// River runs on a sqlfence *sql.DB (riverdatabasesql over sql.OpenDB of a
// sqlfence connector, or sql.Open("sqlfence", …)), but a handler's context
// carries no epoch, so its protected writes fail with sqlfence.ErrUnfenced.
// River's JobRow.Attempt is no epoch: it counts per job, so a valid first
// attempt of one job would be fenced by the third attempt of another. The
// epoch has to come from a claim on the arbiter, drawn from one sequence for
// every job.
//
// # A claim per execution
//
// Before the handler runs, Work claims the job in a claim.Ledger (a claim
// table, sqlfence_claims by default) under the key "river:<job id>", and
// draws the epoch from the global sequence sqlfence_epoch in the same
// statement: every execution of every job gets an epoch above all epochs
// handed out before it. The handler runs under the lease's context
// (claim.Lease.Context): it carries the epoch (sqlfence.WithEpoch) and the
// lease (LeaseFromContext), a keeper renews the lease while the handler runs,
// and the context is cancelled when a write is fenced, the lease is lost, or
// the job's time is up.
//
// Keying the claim by the job, not by the attempt, is what makes a newer
// execution supersede an older one: River delivers a job again after a failed
// attempt, a snooze, or a rescue, and each delivery claims the same row under
// a new epoch, only once the previous execution released it or its lease ran
// out. Two executions of one job never hold it at once; a superseded one
// finds its renewal, release, completion and every write to a row the newer
// one wrote refused with sqlfence.ErrFenced. The claim row also remembers that
// the job is done, so a delivery River repeats (its own completion was lost to
// a crash, or a rescue raced the end of the job) completes at once without
// running the handler again.
//
// # Lifecycle
//
//   - claimed: the handler runs.
//   - the handler returned nil: the claim is completed, and River completes
//     the job. CompleteIn completes the claim inside the handler's own
//     transaction instead, so the writes and "done" commit together.
//   - any error: the claim is released (a river.JobSnooze's duration becomes
//     the release's retry delay) and the error goes to River unchanged:
//     River retries, snoozes, cancels or discards the job as it would.
//   - a protected write was fenced while this execution still held the claim:
//     another job with a newer epoch wrote the row first (the price of epochs
//     that are comparable across jobs; never a lost update). The claim is
//     released and the job snoozes for Config.FencedRetry, which River does
//     not count as an attempt, to run again under a fresh epoch.
//   - superseded (see below): Work returns a *SupersededError, a snooze.
//   - the lease ran out because renewals failed (the arbiter unreachable):
//     the handler's context was cancelled, and River retries the job; the
//     retry claims once the lapsed lease has ended.
//   - the claim is held by another live execution: the delivery snoozes until
//     that lease ends. The claim is done: the delivery completes without
//     running the handler.
//
// # Superseded executions
//
// An execution is superseded when a newer execution of the same job claimed
// it after this one's lease ran out — a process paused past its lease, then
// River's rescuer handing the job to another worker. The superseded
// execution learns it from a fenced write (sqlfence.ErrFenced, and its
// context is cancelled with that cause), a refused renewal (a *claim.LostError
// matching ErrFenced) or a refused completion or release. It stops and must
// not run again: nothing it writes after the newer claim's writes can land.
//
// It must not decide the job's fate either, which is why Work returns a
// snooze rather than river.JobCancel. River applies a worker's result to the
// job row whenever the row is running — also when the execution running it is
// the newer one (River's completion is not conditional on the attempt). A
// JobCancel from the superseded execution would cancel the job under the
// newer execution's feet, and River would then ignore the newer execution's
// own completion or retry: a job whose retry was needed would be lost. A
// snooze is harmless in every order: if the newer execution is still running,
// River delivers the job once more, and that delivery finds the newer claim
// live (it snoozes), released (it runs the job) or done (it completes); if
// River already finalized the job, the snooze changes nothing.
//
// # River's rescuer, job timeout and the lease
//
// River rescues a job that has been running longer than
// Config.RescueStuckJobsAfter (default 1h): it makes the job available again,
// and another worker runs it. That execution claims a newer epoch, which
// fences the stuck one on every row the newer one writes. For the rescue to
// work, the stuck execution's claim must have ended by then, and three
// settings have to agree:
//
//   - River's JobTimeout (default 1m) cancels the handler's context. Set the
//     middleware's Config.JobTimeout to the same value (or to the longest
//     worker Timeout). A handler still running JobTimeout + JobStuckThreshold
//     after it started is taken for stuck: the middleware stops renewing its
//     claim and cancels its context.
//   - The ledger's lease (claim.LedgerConfig.Lease, default 30s) is how long a
//     claim outlives its last renewal: a paused or partitioned process, whose
//     keeper stops too, holds the job at most that long.
//   - So choose RescueStuckJobsAfter > JobTimeout + JobStuckThreshold + Lease
//     (River's defaults: 1h > 1m + 10s + 30s). A rescue that comes earlier
//     finds the claim still held and snoozes until the lease ends — safe, only
//     later. A lease longer than needed delays takeovers; one shorter than a
//     few renewal periods (RenewEvery, default Lease/3) lets a slow arbiter
//     cost a live execution its claim.
//
// # Effects and successors
//
// The lease LeaseFromContext returns is a claim.Ledger lease keyed by the
// job, so its effect keys (claim.Lease.Key) are the same for every execution
// of a River job: claim.Steps and outbox.Outbox.Add work with it as with any lease.
// A successor job is inserted with InsertTx in the handler's fenced
// transaction, after a claim check (Outbox.Add or Steps.Record make one, or
// lease.Check), with the parent's key for the step in a field of its args
// tagged river:"unique" and InsertOpts.UniqueOpts{ByArgs: true}: a
// superseded execution inserts nothing once its successor's claim has
// committed, and two executions that both commit insert one job — River
// reports the second as UniqueSkippedAsDuplicate. River keeps that
// uniqueness while the successor is pending, available, scheduled, running,
// retryable or completed; once it is cancelled or discarded a repeat inserts
// it again.
//
// # Running River on a sqlfence handle
//
// River's own statements pass through sqlfence unchanged (River's tables are
// not protected), judged by sqlfence's allowlist. Two things need the policy
// or River's configuration:
//
//   - River's insert, scheduler and unique-job queries call
//     river_job_state_in_bitmask, an IMMUTABLE SQL function River's migration
//     006 creates. sqlfence refuses calls of functions it cannot see into, so
//     every River insert fails until the policy lists it under
//     safe_functions:. Its body reads a bit of its argument.
//   - River's reindexer (daily, on the leader) runs REINDEX INDEX CONCURRENTLY
//     and DROP INDEX CONCURRENTLY on River's indexes: DDL, refused under the
//     default ddl: deny. Set ReindexerSchedule: river.NeverSchedule() on a
//     client that runs on a sqlfence handle, and reindex from a plain one.
//
// Everything else River v0.51 runs on database/sql passed in the tests:
// inserts (unique ones too), fetching, completion, JobCompleteTx, InsertTx in
// a fenced transaction, the scheduler, the rescuer's queries, cancellation,
// queue pause and resume, listing, retry, deletion and leader election.
// pg_notify, advisory locks and nextval are on sqlfence's list of reviewed
// volatile built-ins. riverdatabasesql has no LISTEN: River polls
// (FetchPollInterval). River may as well run on a plain pgx pool
// (riverpgxv5, with LISTEN/NOTIFY): the middleware only needs Config.DB,
// the database that holds the claim table, and the handlers write through
// the sqlfence handle.
//
// The policy:
//
//	claims:
//	  - table: sqlfence_claims        # the ledger: only the claim helpers write its epoch and status
//	safe_functions:
//	  - river_job_state_in_bitmask    # River's IMMUTABLE SQL function
//
// Create River's tables with River's migrator and the claim table with
// Middleware.Schema, in migrations through a plain handle.
package sqlfenceriver
