package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"

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
		Fix:    "run it under the job's claim: lease.Context() from the claim helpers, or sqlfence.WithEpoch(ctx, epoch) with the epoch the claim returned"}
	if v, ok := ctx.Value(epochKey{}).(invalidEpoch); ok {
		e.Code = rulecode.BadEpoch
		e.Epoch, e.Reason = int64(v), "the context's epoch is not positive"
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
