// Package claim is where epochs come from: helpers that claim a job on the
// arbiter — the PostgreSQL database that serialises claims — and hand the
// handler a context carrying the claim's epoch, for sqlfence to stamp on every
// protected write.
//
// # The model
//
// A claim is one conditional statement. It succeeds only if the job is free
// (pending, or held by a lease that ran out), and it draws a new epoch in the
// same statement, under the job row's lock, so two claimers never get the
// same epoch and each claim of a job gets a higher epoch than the last. The
// epoch is a counter kept by the arbiter, never a clock reading: clocks on
// two machines disagree, and a clock that steps back would hand out a token
// lower than one already accepted.
//
// The lease is the other half. A claim holds its job until lease_expires_at;
// a keeper goroutine renews it while the handler runs, and every renewal,
// completion and release is itself conditional on the row still holding this
// claim's epoch. A worker paused past its lease (a GC pause, a migrated VM, a
// SIGSTOP) wakes to find that it can no longer renew, complete or release,
// and — through sqlfence — no longer write a protected row its successor
// wrote: each of those is refused with an error matching sqlfence.ErrFenced.
//
//	jobs, err := claim.NewJobs(claim.JobsConfig{Returning: []string{"sku", "qty"}})
//	...
//	var sku string
//	var qty int
//	lease, err := jobs.ClaimNext(ctx, db, &sku, &qty)
//	if errors.Is(err, claim.ErrNoJob) {
//		return nil // nothing to do: poll again later
//	}
//	defer lease.Stop() // a panic or early return must not leave the keeper renewing
//
//	ctx := lease.Context() // carries the epoch; cancelled when the execution must stop
//	_, err = fenced.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, sku, qty)
//	err = lease.Err(err) // a statement cut short by a fence's cancellation: context.Canceled, with the cause added
//	switch {
//	case err == nil:
//		err = lease.Complete(context.Background())
//	case errors.Is(err, sqlfence.ErrFenced):
//		// A newer claim wrote the row. If this claim still holds the job, hand
//		// it to a fresh claim; if it was superseded, the release is fenced too
//		// and the successor finishes the job.
//		err = lease.Release(context.Background(), 0)
//	}
//
// # Completing with the writes
//
// Fencing guarantees that a superseded execution cannot write after its
// successor; it cannot undo what the execution wrote while it still held the
// job. A handler that writes and then completes leaves a gap: its lease can
// run out between the two, and a successor repeats the work. Lease.CompleteIn
// closes it by completing inside the handler's transaction: the writes and
// "job done" commit together, and a superseded execution's completion is
// refused, rolling its writes back with it. examples/worker does this.
//
// # One context stops the handler
//
// Lease.Context is cancelled when the execution has to stop, whatever the
// reason: a write through sqlfence was fenced (cause: the *sqlfence.Error), a
// renewal was refused or the lease ran out (cause: *LostError, ErrLeaseLost),
// or the lease was completed, released or stopped (cause: ErrEnded). The fence
// and the keeper cancel through the same function (sqlfence.OnFenced), so a
// handler watches one context and reads context.Cause to learn why. Complete,
// Release and Stop stop the keeper and cancel the context, so a lease that
// ends without a fence leaves no goroutine behind.
//
// # Epoch sources
//
// Jobs claims rows of a jobs table (status, lease_epoch, lease_expires_at,
// available_at; every name configurable). Its epoch comes from one of three
// sources:
//
//   - GlobalEpoch (the default): a PostgreSQL sequence shared by every job,
//     stored in the job's lease_epoch column so that renewals and completion
//     are fenced on it. Epochs of different jobs are comparable, so the
//     fencing is sound however jobs share rows. The trade-off: a newer claim's
//     write fences an older claim that is still valid. When jobs 1 (epoch 7)
//     and 2 (epoch 8) both update one inventory row and job 2 writes first,
//     job 1's write is fenced although job 1 was never superseded; its handler
//     aborts, releases, and the job runs again under a fresh epoch. Under
//     contention on shared rows that is a retry, never a lost update.
//
//   - PerJobEpoch: lease_epoch + 1 on the job's own row, the background
//     document's claim. Per-job epochs are only sound when each protected
//     row is written by one job's executions. Epochs of different jobs are
//     unrelated: if job A at epoch 5 writes a row, job B's first claim (epoch
//     1) is fenced from that row forever, and a stale execution of job C at
//     epoch 9 overwrites what B or A wrote. Use it only when every protected
//     row belongs to exactly one job (a job per account, per document).
//
//   - CounterEpoch: one counter row, incremented in the claim's statement.
//     Comparable across jobs like GlobalEpoch, and ordered on distributed
//     PostgreSQL, where a sequence is not; claims take the row's lock in
//     turn, so they run one at a time.
//
// On CockroachDB, YugabyteDB (whose sequences are cached per node, whatever
// CACHE says) and Citus, a sequence's values are not ordered across nodes: a
// claim could draw an epoch below one another node already handed out. A
// GlobalEpoch claim probes the server once per *sql.DB or *sql.Conn (every
// time in a *sql.Tx) and refuses there with ErrUnorderedSequence, before
// drawing anything; CounterEpoch and PerJobEpoch rely only on updates of one
// row being serialised.
//
// Ledger is the third source: a claim table (job_id, lease_epoch, status,
// lease_expires_at) for queues that give out only an opaque receipt and a
// receive count, such as SQS. The application's database becomes the arbiter
// although the queue is remote: a worker that receives a message claims its
// job id in the claim table, under the same conditional-update discipline and
// either epoch source, and acknowledges the message with the receipt.
//
// # Through a failover
//
// With asynchronous replication, a standby promoted after the primary died has
// not received the primary's last transactions, and the claims among them are
// gone: drawn as a plain counter, the promoted standby would hand the same epochs
// out again, and a superseded execution's token would be as good as its
// successor's. So every source draws above the floor of the arbiter's WAL
// timeline, which a promotion moves past every timeline the cluster had:
//
//	GlobalEpoch:  timeline<<32 + nextval(sequence)
//	CounterEpoch: timeline<<32 + the counter row's new value
//	PerJobEpoch:  greatest(lease_epoch + 1, timeline<<32 + 1)
//
// An epoch drawn after a promotion is above every epoch drawn before it,
// whatever the lost WAL held (up to 2^32 claims). Epochs drawn before this format
// (below 2^32) are below every new one, so rows and live claims keep working;
// sqlfence audit tells the two apart. Epochs stay one bigint: the first claim on a
// new cluster (timeline 1) is 4294967297.
//
// A lease notices a failover: a renewal or claim check that finds the job's epoch
// below its own (the claim was lost), or the arbiter on another timeline than the
// claim's, stops the lease with a *FailoverError (ErrFailover, ErrLeaseLost; not
// ErrFenced, since no newer claim superseded it), logs a warning and calls
// JobsConfig.OnFailover. A claim whose connection is lost in flight returns
// ErrOutcomeUnknown, never a lease.
//
// Claims, renewals, completions, releases and claim checks (and so steps,
// successors and outbox messages, which run one) commit with synchronous_commit
// on, whatever the session set: with a synchronous standby, none is acknowledged
// before the standby has it, and a failover loses none.
// RequireSynchronousStandby refuses claims while no synchronous standby is
// attached (ErrNoSynchronousStandby). The "Failover and replication" section of
// docs/deploying.md says what holds under each replication setting.
//
// # Claim-checked writes, and what fencing promises
//
// Lease.Context carries the claim (sqlfence.WithClaim), so every fenced write
// also checks, in the same statement, that the job's row still holds this
// claim's epoch, and locks that row FOR KEY SHARE until the transaction ends. A
// superseded execution is fenced on every protected row, also rows its
// successor has not written yet. Takeovers lock the row FOR UPDATE: Claim
// reports a job whose old claim still has a transaction open after a
// claim-checked write (NotClaimableError.Locked) and ClaimNext skips it, so a
// new claim commits after that transaction's writes. Renewals do not conflict with that lock.
//
// The check reads the job's row inside each write, so the jobs or claim
// table must be in the same database as the protected tables; a claim-checked
// write sent to a database without it fails and writes nothing. When the jobs
// live in another database, claim each job in a Ledger in the protected
// database (the other one keeps delivering) and run the handler under that
// lease.
//
// Fencing orders writers and stops superseded ones: once a successor's claim
// has committed, the superseded execution writes no protected row. What it
// wrote while its claim was current stands; a handler of several transactions
// records each step with its writes and skips the steps an earlier execution
// committed. It is not concurrency control between live claims: two valid claims of different jobs can
// interleave a read-modify-write. Write relative updates (SET q = q - $1) or
// read with SELECT … FOR UPDATE in the write's transaction; reading a value,
// computing, and writing it back in a later statement loses the other claim's
// update. With the policy's stale: claim, writes under a claim are checked
// against the claim only, so a valid older claim of another job is not fenced
// by a newer one's write.
//
// # Effects past the database
//
// Fencing stops a superseded execution; it does not undo what the execution
// did while its claim was current. Lease.Key names each effect of a job the
// same way for every execution (namespace, table, job id, step; never the
// epoch), for receivers that deduplicate by key. Steps records a handler's
// transactions once, so a later execution skips the ones an earlier one
// committed; EnqueueSuccessor inserts the next job under its parent's key,
// once however many executions of the parent commit; the outbox package
// carries messages to receivers outside the database under their keys. Each
// of them first runs Lease.Check in the caller's transaction: the FOR KEY
// SHARE lock a takeover waits for, so what the transaction writes commits
// before any successor's claim, or not at all.
//
// # Claim discipline
//
// Every statement the helpers run is marked (internal/claimctx) so that
// sqlfence can refuse any other write to a claim table's epoch or status
// columns: one job type claimed by a plain status update would carry no epoch,
// and its writes would look like epoch zero to every comparison. Enqueue jobs
// with an INSERT that leaves status and the epoch to their defaults.
//
// # Keeping the counters honest
//
// Epochs only ever grow. Restoring the jobs table from a backup, moving a
// sequence back (setval), or switching a table from PerJobEpoch to
// GlobalEpoch while its lease_epoch values exceed the sequence can hand out an
// epoch lower than one already written, which lets a stale execution write
// again. After such a change, run `sqlfence audit --fix`: it finds rows whose
// epoch is above the counter and raises the counter past them in one
// transaction, holding off concurrent claims (a bare setval can race with them);
// --counter names CounterEpoch's counter table, --jobs-table a PerJobEpoch table.
// The counter it compares with is the next claim's, timeline floor included.
// The sequence must keep CACHE 1 and NO CYCLE, as Schema creates it.
package claim
