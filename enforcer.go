package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// enforcer holds what every connection of one connector shares: the policy and the cache
// of decisions made under it.
type enforcer struct {
	policy *Policy
	cache  *cache
	log    *slog.Logger

	observer  func(context.Context, Event) // WithObserver's, or nil
	shadow    *shadowTally                 // under enforce: shadow, else nil
	observing bool                         // either is set: call note (observe.go)
	names     sync.Map                     // *Table → its name in events (observe.go)
}

func newEnforcer(p *Policy, cfg connectorConfig) *enforcer {
	return &enforcer{policy: p, cache: newCache(cfg.cacheEntries, cfg.cacheBytes), log: cfg.logger,
		observer: cfg.observer, shadow: cfg.shadow, observing: cfg.observer != nil || cfg.shadow != nil}
}

// decision returns the decision for query, from the cache when it has been seen.
func (f *enforcer) decision(query string) *decision {
	if d, ok := f.cache.get(query); ok {
		return d
	}
	d, shaped := f.decide(query)
	if !shaped || f.cache.admit(query) {
		f.cache.put(query, d)
	}
	return d
}

// decide takes the decision for a text the cache does not hold: from the plan of an
// earlier text of the same shape when there is one (shape.go; shaped is then true),
// by analysis otherwise, which then leaves a plan for the texts of its shape.
func (f *enforcer) decide(query string) (d *decision, shaped bool) {
	ca := f.cache
	if !ca.enabled() || !shapeable(query) {
		return analyze(f.policy, query), false
	}
	scanned, err := pgtree.ScanTokens(query, nil)
	if err != nil {
		return analyze(f.policy, query), false // the analysis says why
	}
	toks, key := shapeOf(query, scanned)
	if p := ca.shape(key); p != nil {
		if d := p.derive(query, toks); d != nil {
			ca.shapeHit()
			return d, true
		}
	}
	d, plan := analyzeShaped(f.policy, query, scanned, nil, true)
	if plan != nil {
		ca.putShape(key, plan)
	}
	return d, false
}

// call is one execution of a decided statement: the text and arguments to send.
type call struct {
	d       *decision
	query   string // the application's text
	send    string // the text to send
	args    []driver.NamedValue
	user    []driver.NamedValue // the application's arguments without pgx's option values
	epoch   int64
	fenced  bool        // the sent statement carries the fence
	claim   *claimCheck // the sent statement checks this claim (d is then its variant)
	checked bool        // check queried the server about the result
}

// bind decides what one execution sends. Refusals and unfenced writes become errors
// here, before anything reaches the server; in shadow mode they are logged and the
// application's text is sent unchanged. The call is returned by value so that it can
// live on the caller's stack: at a cache hit the only allocation left is the argument
// slice with the epoch appended.
func (f *enforcer) bind(ctx context.Context, d *decision, query string, args []driver.NamedValue) (call, error) {
	c := call{d: d, query: query, send: query, args: args}
	if d.act == actPass {
		if f.observing {
			f.note(ctx, Event{Outcome: OutcomePass, Statement: query})
		}
		return c, nil
	}
	// EpochFrom, keeping the interface value: sending it as the epoch argument reuses
	// the int64 WithEpoch boxed once, where boxing it again would allocate on every
	// execution (Go only has preallocated boxes for 0…255).
	epochValue := ctx.Value(epochKey{})
	epoch, hasEpoch := epochValue.(int64)
	c.epoch = epoch
	var err error
	switch {
	case d.act == actClaim:
		if claimctx.From(ctx) {
			if f.observing {
				f.note(ctx, Event{Outcome: OutcomePass, Statement: query, Epoch: epoch})
			}
			return c, nil
		}
		err = &Error{Kind: ErrRefused, Code: rulecode.ClaimWrite, Table: d.claim.QualifiedName.String(), Epoch: epoch, Statement: query,
			Reason: "the statement writes the claim table's " + sqlident.Quote(d.claim.StatusColumn) + " or " + sqlident.Quote(d.claim.EpochColumn) +
				" column outside sqlfence's claim helpers: a claim that does not increment the epoch gives its job no token",
			Fix: "claim, renew and complete jobs with the helpers in github.com/sqlfence/sqlfence/claim"}
	case d.act == actRefuse:
		err = d.refusal.forStatement(query, epoch)
	case !hasEpoch:
		if reason, ok := unfencedReason(ctx); ok && f.policy.AllowUnfenced {
			f.log.WarnContext(ctx, "sqlfence: unfenced write", "code", rulecode.UnfencedAllowed, "table", d.table(), "reason", reason, "statement", abbreviate(query, 200))
			if f.observing {
				f.noteLetThrough(ctx, rulecode.UnfencedAllowed, d.table(), query)
			}
			return c, nil
		}
		err = f.unfenced(ctx, d, query)
	default:
		if cc := claimFrom(ctx); cc != nil && d.act == actRewrite {
			if cc.err != "" {
				err = &Error{Kind: ErrRefused, Code: rulecode.ClaimUnusable, Table: d.table(), Epoch: epoch, Statement: query,
					Reason: "the context's claim (sqlfence.WithClaim) is unusable: " + cc.err,
					Fix:    "give WithClaim the claim table, its key and epoch columns as written in SQL, and the job's key"}
				break
			}
			d = d.claimVariant(f.policy, query, cc)
			c.d, c.claim = d, cc
			if d.act != actRewrite {
				err = d.refusal.forStatement(query, epoch)
				break
			}
		}
		err = checkArgs(d, query, epoch, args, &c)
	}
	if err != nil {
		if f.observing {
			f.noteError(ctx, err, query, epoch)
		}
		if f.policy.Enforce == EnforceShadow {
			c.send, c.args = query, args // logged by the shadow tally
			return c, nil
		}
		return call{}, err
	}
	if f.observing {
		f.note(ctx, Event{Outcome: OutcomeFence, Table: f.tableName(d), Statement: query, Epoch: epoch})
	}
	if f.policy.Enforce == EnforceShadow {
		return call{d: d, query: query, send: query, args: args}, nil
	}
	c.send = d.sql
	c.fenced = true
	// A new slice of exactly the right size: the application's slice must not be
	// written, and append would round its capacity up to the next size class.
	extra := 1
	if c.claim != nil {
		extra = 2
	}
	c.args = make([]driver.NamedValue, len(args)+extra)
	copy(c.args, args)
	c.args[len(args)] = driver.NamedValue{Ordinal: len(args) + 1, Value: epochValue}
	if c.claim != nil {
		c.args[len(args)+1] = driver.NamedValue{Ordinal: len(args) + 2, Value: c.claim.value}
	}
	return c, nil
}

// checkRewriter refuses an argument that rewrites the SQL text (a pgx query rewriter,
// pgx.NamedArgs among them): the text sent would not be the text sqlfence decided on.
// database/sql asks every argument of every statement through CheckNamedValue before
// the statement reaches the driver, so this holds for reads and unprotected writes too.
func (f *enforcer) checkRewriter(nv *driver.NamedValue) error {
	if _, ok := nv.Value.(pgx.QueryRewriter); !ok {
		return nil
	}
	err := &Error{Kind: ErrRefused, Code: rulecode.RewritingArgument,
		Reason: "an argument that rewrites the SQL text (a pgx query rewriter such as pgx.NamedArgs): the text sent would not be the text sqlfence checked",
		Fix:    "use positional $n parameters"}
	if f.observing {
		f.noteError(context.Background(), err, "", 0)
	}
	if f.policy.Enforce == EnforceShadow {
		return nil // logged by the shadow tally
	}
	return err
}

func (f *enforcer) unfenced(ctx context.Context, d *decision, query string) error {
	e := &Error{Kind: ErrUnfenced, Code: rulecode.NoEpoch, Table: d.table(), Statement: query,
		Reason: "a write to a protected table without an epoch on the context",
		Fix:    "run it under sqlfence.WithEpoch(ctx, claim.Epoch) from the job's claim"}
	if v, ok := ctx.Value(epochKey{}).(invalidEpoch); ok {
		e.Code = rulecode.BadEpoch
		e.Reason = fmt.Sprintf("the context's epoch %d is not positive", int64(v))
		e.Fix = "pass the epoch the claim returned; epochs start at 1"
	} else if _, ok := unfencedReason(ctx); ok {
		e.Code = rulecode.UnfencedDenied
		e.Reason = "sqlfence.Unfenced was used but the policy does not allow unfenced writes"
		e.Fix = "set `unfenced: allow` in the policy, or run the write under sqlfence.WithEpoch"
	}
	return e
}

// checkArgs refuses arguments whose meaning depends on rewriting the query text
// (named arguments, pgx query rewriters) and checks that the epoch lands on the
// parameter number the fence uses.
func checkArgs(d *decision, query string, epoch int64, args []driver.NamedValue, c *call) error {
	c.user = args
	options := 0
	for _, a := range args {
		if a.Name != "" {
			return d.refuseArgs(rulecode.RewritingArgument, query, epoch, "named argument "+a.Name, "use positional $n parameters")
		}
		switch a.Value.(type) {
		case pgx.QueryRewriter:
			return d.refuseArgs(rulecode.RewritingArgument, query, epoch, "a pgx query rewriter (such as pgx.NamedArgs)", "use positional $n parameters")
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
			options++
		}
	}
	if options > 0 {
		c.user = make([]driver.NamedValue, 0, len(args)-options)
		for _, a := range args {
			switch a.Value.(type) {
			case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
			default:
				c.user = append(c.user, a)
			}
		}
	}
	if len(c.user) != d.epochParam-1 {
		return d.refuseArgs(rulecode.ArgumentCount, query, epoch, fmt.Sprintf("%d arguments for a statement whose highest parameter is $%d", len(c.user), d.epochParam-1),
			fmt.Sprintf("pass exactly one argument per parameter $1…$%d: the epoch becomes $%d", d.epochParam-1, d.epochParam))
	}
	return nil
}

func (d *decision) refuseArgs(code, query string, epoch int64, what, fix string) error {
	return &Error{Kind: ErrRefused, Code: code, Table: d.table(), Epoch: epoch, Statement: query,
		Reason: "a protected write with " + what, Fix: fix}
}

// check runs after a fenced write. A write that affected no rows is classified — a
// newer epoch on a matching row is a fence, this epoch in strict mode is "already
// written", no matching row is an ordinary result. With WithExactAccounting, a write
// that affected rows is also checked for matching rows the fence kept. Only these
// paths query again; the normal path costs no extra round trip.
func (f *enforcer) check(ctx context.Context, q driver.Conn, c *call, affected int64) (err error) {
	if !c.fenced {
		return nil
	}
	if f.observing {
		start := time.Now()
		defer func() {
			if c.checked || err != nil {
				f.noteCheck(ctx, c, start, err)
			}
		}()
	}
	if c.claim != nil && affected == 0 {
		// A claim-checked write that wrote nothing: first ask whether the claim
		// is still current, the one thing the row cannot tell.
		if err := f.superseded(ctx, q, c); err != nil {
			return noteFenced(ctx, err)
		}
	}
	cl := c.d.classify
	if cl == nil || affected > 0 && !exactAccounting(ctx) {
		return nil
	}
	if c.claim != nil && cl.table.Stale == StaleClaim {
		return nil // the row's epoch is stamped, not compared: nothing was fenced by it
	}
	return noteFenced(ctx, f.classify(ctx, q, c, affected))
}

// superseded reads the claim row of a claim-checked write and returns ErrFenced when
// it no longer holds the write's epoch; nil while the claim is current.
func (f *enforcer) superseded(ctx context.Context, q driver.Conn, c *call) error {
	c.checked = true
	rows, err := queryConn(ctx, q, c.claim.lookupText(), []driver.NamedValue{{Ordinal: 1, Value: c.claim.value}})
	if err != nil {
		return checkFailed(err)
	}
	defer rows.Close()
	e := &Error{Kind: ErrFenced, Code: rulecode.FencedClaim, Table: c.d.table(), Epoch: c.epoch, Statement: c.query,
		Fix: "this execution is superseded: stop the handler and do not retry with this epoch; the newer claim finishes the job"}
	dest := make([]driver.Value, 1)
	switch err := rows.Next(dest); {
	case errors.Is(err, io.EOF):
		e.Reason = fmt.Sprintf("the claim was superseded: job %v is no longer in the claim table %s", c.claim.value, c.claim.table)
		return e
	case err != nil:
		return checkFailed(err)
	}
	stored, ok := dest[0].(int64)
	switch {
	case !ok:
		e.Reason = fmt.Sprintf("the claim was superseded: job %v in the claim table %s holds no epoch", c.claim.value, c.claim.table)
	case stored == c.epoch:
		return nil
	}
	e.StoredEpoch, e.HasStored = stored, ok
	switch {
	case !ok:
	case stored > c.epoch:
		e.Reason = fmt.Sprintf("the claim was superseded: job %v was claimed again at epoch %d (claim table %s)", c.claim.value, stored, c.claim.table)
	default:
		e.Reason = fmt.Sprintf("the claim is not current: job %v holds epoch %d in the claim table %s, below this claim's (an epoch moved back: a restore, a test, a manual fix)", c.claim.value, stored, c.claim.table)
		e.Fix = "stop the handler; audit the epochs (sqlfence audit) before running more jobs"
	}
	return e
}

// claimError turns the server's answer to a claim-checked write whose claim was
// superseded into ErrFenced: the check yielded NULL, and the epoch column's NOT NULL
// constraint refused the row (SQLSTATE 23502). Other errors pass unchanged.
func (f *enforcer) claimError(ctx context.Context, q driver.Conn, c *call, err error) error {
	if c.claim == nil {
		return err
	}
	if e := c.claim.notInDatabase(err, c); e != nil {
		return e
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23502" {
		return err
	}
	epochColumn := false
	for _, t := range c.d.tables {
		epochColumn = epochColumn || pgErr.ColumnName == t.EpochColumn
	}
	if !epochColumn {
		return err
	}
	start := time.Now()
	ferr := f.superseded(ctx, q, c)
	if !errors.Is(ferr, ErrFenced) {
		ferr = nil // the claim is current, or the check failed: the server's error stands
	}
	if f.observing {
		f.noteCheck(ctx, c, start, ferr)
	}
	if ferr != nil {
		return noteFenced(ctx, ferr)
	}
	return err
}

func (f *enforcer) classify(ctx context.Context, q driver.Conn, c *call, affected int64) error {
	cl := c.d.classify
	t := cl.table
	fenced := &Error{Kind: ErrFenced, Code: rulecode.FencedRow, Table: t.QualifiedName.String(), Epoch: c.epoch, Statement: c.query,
		Reason: "a newer claim has written the rows this statement matches",
		Fix: "stop the handler and do not retry with this epoch: either this execution was superseded, or (global epochs) another job's newer claim wrote the row; " +
			"release the job so it runs again under a newer epoch, and run handlers under the claim (sqlfence.WithClaim) to tell the two apart"}
	if c.claim != nil {
		fenced.Fix = "the row is fenced for this epoch, though this execution's claim is still current: release the job so it runs again under a newer claim, or declare the table `stale: claim`"
	}
	if cl.conflictOnly {
		// The conflicting rows cannot be read back (see classifier.conflictOnly), so
		// neither can a partial fence be counted.
		if affected > 0 {
			return nil
		}
		fenced.Reason = "every row conflicted with an existing row the fence kept"
		if t.Mode == ModeStrict {
			// In strict mode this epoch's own earlier write is kept too; without the
			// rows it cannot be told from a newer claim's, and a fence is the safe
			// reading (it stops the handler rather than let it go on superseded).
			fenced.Reason += ", written by a newer claim or, in strict mode, by this epoch before; " +
				"name the conflict columns (ON CONFLICT (col, …)) and insert constants or parameters for them so sqlfence can tell which"
		}
		return fenced
	}
	if cl = cl.resolve(f.policy, c.query, c.d.sql); cl == nil {
		return checkFailed(errors.New("the statement's classification query could not be rebuilt from its text"))
	}
	args := make([]driver.NamedValue, len(cl.args)+1)
	for i, a := range cl.args {
		if a < 0 || a >= len(c.user) {
			return nil
		}
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: c.user[a].Value}
	}
	args[len(cl.args)] = driver.NamedValue{Ordinal: len(args), Value: c.epoch}
	c.checked = true
	rows, err := queryConn(ctx, q, cl.query, args)
	if err != nil {
		return checkFailed(err)
	}
	defer rows.Close()
	dest := make([]driver.Value, 2)
	if err := rows.Next(dest); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return checkFailed(err)
	}
	stored, ok := dest[0].(int64)
	if !ok {
		return nil // no row matches: an ordinary 0-row result
	}
	if affected > 0 {
		if n, _ := dest[1].(int64); n > 0 {
			fenced.Reason = "a newer claim has written some of the rows this statement matches; the others were written"
			fenced.Affected, fenced.Fenced = affected, n
			fenced.StoredEpoch, fenced.HasStored = stored, stored > c.epoch
			return fenced
		}
		return nil
	}
	switch {
	case stored > c.epoch:
		fenced.StoredEpoch, fenced.HasStored = stored, true
		if c.claim != nil {
			// superseded found the claim current: the newer epoch is another job's.
			fenced.Reason = fmt.Sprintf("a newer claim wrote this row (epoch %d, another job's); this execution's claim is still current", stored)
		}
		return fenced
	case stored == c.epoch && t.Mode == ModeStrict:
		return &Error{Kind: ErrAlreadyWritten, Code: rulecode.AlreadyWritten, Table: t.QualifiedName.String(), Epoch: c.epoch, Statement: c.query,
			StoredEpoch: stored, HasStored: true,
			Reason: "already written by this epoch: this execution wrote the row before, and strict mode allows one write per row per epoch",
			Fix:    "use mode: repeatable for this table if this handler writes a row more than once"}
	}
	return nil
}

// fencedRows wraps the rows of a fenced write with RETURNING, so that an empty result
// is classified like a write that affected no rows.
func (f *enforcer) wrapRows(ctx context.Context, q driver.Conn, rows driver.Rows, c call) driver.Rows {
	fr := &fencedRows{inner: rows, explain: func() error { return f.check(ctx, q, &c, 0) }}
	if c.claim != nil {
		fr.translate = func(err error) error { return f.claimError(ctx, q, &c, err) }
	}
	if c.d.classify == nil || !c.d.classify.returning {
		fr.explain = func() error { return nil }
	}
	return fr
}

// checkFailed reports a failed classification query. The write itself already ran, so
// the error must not be driver.ErrBadConn: database/sql would run the write again on
// another connection.
func checkFailed(err error) error {
	if errors.Is(err, driver.ErrBadConn) {
		return fmt.Errorf("sqlfence: the write ran, but checking the rows it matched failed: the connection broke (%v)", err)
	}
	return fmt.Errorf("sqlfence: the write ran, but checking the rows it matched failed: %w", err)
}

// queryConn runs a query on the inner connection, through QueryerContext when it has
// one and through a prepared statement otherwise, so that classification does not
// depend on an optional interface.
func queryConn(ctx context.Context, c driver.Conn, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.(driver.QueryerContext); ok {
		rows, err := q.QueryContext(ctx, query, args)
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
