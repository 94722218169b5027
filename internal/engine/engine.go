// The engine's entry: one Engine per compiled policy (and catalog snapshot), the
// decision of a text from the cache, by shape or by analysis, and Bind, which turns
// a decision and what the statement's context says into what a front sends.

package engine

import (
	"fmt"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Engine decides statements under one compiled policy and keeps the decisions in a
// cache shared by every connection of a connector. An Engine never changes its
// policy: when the catalog is read again, the front makes a new Engine (with an
// empty cache), so no decision taken under an old snapshot is reused.
type Engine struct {
	policy *Policy
	cache  *cache
}

// New returns an Engine for p with a cache bounded at entries decisions and bytes
// bytes (either 0: no cache, every statement is analysed each time).
func New(p *Policy, entries, bytes int) *Engine {
	return &Engine{policy: p, cache: newCache(entries, bytes)}
}

// Policy returns the compiled policy the engine decides with.
func (e *Engine) Policy() *Policy { return e.policy }

// Stats reports the cache's figures.
func (e *Engine) Stats() CacheStats { return e.cache.stats() }

// Decide returns the decision for query, from the cache when it has been seen.
func (e *Engine) Decide(query string) *Decision {
	if d, ok := e.cache.get(query); ok {
		return d
	}
	d, shaped := e.decide(query)
	if !shaped || e.cache.worthKeeping(query) {
		e.cache.put(query, d)
	}
	return d
}

// Lookup is Decide for a connection that keeps a Memo of its last decisions: the
// memo, then the shared cache, then the analysis. A Memo belongs to one Engine; a
// front drops it when it moves to a new one.
func (e *Engine) Lookup(m *Memo, query string) *Decision {
	ca := e.cache
	if en := m.find(query); en != nil {
		ca.hit(en)
		return en.d
	}
	if en, ok := ca.entry(query); ok {
		m.remember(en)
		return en.d
	}
	d, shaped := e.decide(query)
	if shaped && !ca.worthKeeping(query) {
		return d
	}
	if en := ca.put(query, d); en != nil {
		m.remember(en)
	}
	return d
}

// decide takes the decision for a text the cache does not hold: from the plan of an
// earlier text of the same shape when there is one (shape.go; shaped is then true),
// by analysis otherwise, which then leaves a plan for the texts of its shape.
func (e *Engine) decide(query string) (d *Decision, shaped bool) {
	ca := e.cache
	if !ca.enabled() || !shapeable(query) {
		return Analyze(e.policy, query), false
	}
	scanned, err := pgtree.ScanTokens(query, nil)
	if err != nil {
		return Analyze(e.policy, query), false // the analysis says why
	}
	toks, key, runs := shapeOf(query, scanned)
	if p := ca.shape(key); p != nil {
		if d := p.derive(query, toks, runs); d != nil {
			ca.shapeHit()
			return d, true
		}
	}
	d, plan := analyzeShaped(e.policy, query, scanned, nil, true)
	if plan != nil {
		ca.putShape(key, plan)
	}
	return d, false
}

// Pass is the decision to send a text unchanged.
var Pass = &Decision{act: ActPass}

// Act, SQL, EpochParam, Refusal, Tables, ClaimTable and Catalog read a decision.
func (d *Decision) Act() Action             { return d.act }
func (d *Decision) SQL() string             { return d.sql }
func (d *Decision) EpochParam() int         { return d.epochParam }
func (d *Decision) Refusal() *Error         { return d.refusal }
func (d *Decision) Tables() []*Table        { return d.tables }
func (d *Decision) ClaimTable() *ClaimTable { return d.claimTable }
func (d *Decision) Catalog() CatalogEffect  { return d.catalog }
func (d *Decision) TableNames() string      { return d.table() }
func (d *Decision) Classifier() *Classifier { return d.zeroRows }

// Session is what a statement's context says, as the front read it.
type Session struct {
	Epoch    int64 // WithEpoch's value; with BadEpoch, the non-positive value it was given
	HasEpoch bool
	BadEpoch bool // WithEpoch was given a non-positive epoch
	// Unfenced is sqlfence.Unfenced's reason, when HasUnfenced.
	Unfenced    string
	HasUnfenced bool
	Claim       *ClaimCheck // WithClaim's, or nil
	ClaimHelper bool        // the statement is one of the claim helpers' own
}

// Bound is one execution of a decided statement: what to send, and what the front
// must do with the result.
type Bound struct {
	D     *Decision // the decision sent (a claim variant under a claim)
	Query string    // the application's text
	Send  string    // the text to send
	Epoch int64
	// Fenced: Send carries the fence; the front appends the epoch as parameter
	// D.EpochParam() and, with Claim, the claim's key after it.
	Fenced bool
	// LetThrough: a protected write sent unfenced under sqlfence.Unfenced with
	// `unfenced: allow`; the front logs it.
	LetThrough bool
	// Carried: Send carries the epoch in the guard's marker for the writes the server
	// makes on the statement's behalf (carry.go): a statement prepared without it runs
	// unprepared, and the guard's fence errors are the driver's (GuardFenced).
	Carried bool
	Claim   *ClaimCheck
	// Checked is set when a result check queried the server about this execution.
	Checked bool
}

// Bind decides what one execution of d sends, given the context's session and the
// number of the application's positional arguments (nargs; -1 when the front has
// already refused the arguments). Refusals and unfenced writes are errors; nothing
// is sent for them. Shadow mode is the front's: it sends Query when Bind refuses.
func (e *Engine) Bind(d *Decision, query string, s Session, nargs int) (Bound, *Error) {
	b := Bound{D: d, Query: query, Send: query, Epoch: s.Epoch}
	switch {
	case d.act == ActPass && d.carry == nil:
		return b, nil
	case d.act == ActClaim:
		if s.ClaimHelper {
			return b, nil
		}
		if d.claimTable.StatusColumn == "" { // epochobjects.go
			return Bound{}, &Error{Kind: KindRefused, Code: rulecode.ClaimWrite, Table: d.claimTable.QualifiedName.String(), Epoch: s.Epoch, Statement: query,
				Reason: "the statement writes the epoch counter " + d.claimTable.QualifiedName.String() + " outside sqlfence's claim helpers: a counter moved back or reset hands out epochs already used, and a stale execution writes again",
				Fix:    "draw epochs with the helpers in github.com/sqlfence/sqlfence/claim; an operator moves the counter upwards outside the driver (sqlfence audit --fix)"}
		}
		return Bound{}, &Error{Kind: KindRefused, Code: rulecode.ClaimWrite, Table: d.claimTable.QualifiedName.String(), Epoch: s.Epoch, Statement: query,
			Reason: "the statement writes the claim table's " + sqlident.Quote(d.claimTable.StatusColumn) + " or " + sqlident.Quote(d.claimTable.EpochColumn) +
				" column outside sqlfence's claim helpers: a claim that does not increment the epoch gives its job no token",
			Fix: "claim, renew and complete jobs with the helpers in github.com/sqlfence/sqlfence/claim"}
	case d.act == ActRefuse:
		return Bound{}, d.refusal.ForStatement(query, s.Epoch)
	case !s.HasEpoch:
		if s.HasUnfenced && e.policy.AllowUnfenced {
			b.LetThrough = true
			return b, nil
		}
		return Bound{}, unfenced(d, query, s)
	case d.act == ActPass:
		// Nothing of its own to fence: the epoch goes to the guard alone.
		send, err := d.carryText(e.policy, query, s.Epoch, s.Claim)
		if err != nil {
			return Bound{}, err
		}
		b.Send, b.Carried = send, true
		return b, nil
	}
	if cc := s.Claim; cc != nil && d.act == ActRewrite {
		if cc.err != "" {
			return Bound{}, &Error{Kind: KindRefused, Code: rulecode.ClaimUnusable, Table: d.table(), Epoch: s.Epoch, Statement: query,
				Reason: "the context's claim (sqlfence.WithClaim) is unusable: " + cc.err,
				Fix:    "give WithClaim the claim table, its key and epoch columns as written in SQL, and the job's key"}
		}
		d = d.claimVariant(e.policy, query, cc)
		b.D, b.Claim = d, cc
		if d.act != ActRewrite {
			return Bound{}, d.refusal.ForStatement(query, s.Epoch)
		}
	}
	if nargs != d.epochParam-1 {
		return Bound{}, d.RefuseArgs(rulecode.ArgumentCount, query, s.Epoch,
			fmt.Sprintf("%d arguments for a statement whose highest parameter is $%d", nargs, d.epochParam-1),
			fmt.Sprintf("pass exactly one argument per parameter $1…$%d: the epoch becomes $%d", d.epochParam-1, d.epochParam))
	}
	b.Send, b.Fenced = d.sql, true
	if d.carry != nil {
		send, err := d.carryText(e.policy, query, s.Epoch, b.Claim)
		if err != nil {
			return Bound{}, err
		}
		b.Send, b.Carried = send, true
	}
	return b, nil
}

// unfenced is the error for a protected write without a usable epoch.
func unfenced(d *Decision, query string, s Session) *Error {
	e := &Error{Kind: KindUnfenced, Code: rulecode.NoEpoch, Table: d.table(), Statement: query,
		Reason: "a write to a protected table without an epoch on the context",
		Fix:    "run it under the job's claim: lease.Context() from the claim helpers, or sqlfence.WithEpoch(ctx, epoch) with the epoch the claim returned"}
	if d.act == ActPass && d.carry != nil {
		e.Table = d.carriedNames()
		e.Reason = "the statement fires triggers, foreign-key actions, rules or functions that write the protected table " + e.Table +
			", which the guard fences with the statement's epoch, and the context has no epoch"
	}
	switch {
	case s.BadEpoch:
		e.Code = rulecode.BadEpoch
		e.Epoch, e.Reason = s.Epoch, "the context's epoch is not positive"
		e.Fix = "pass the epoch the claim returned; epochs start at 1"
	case s.HasUnfenced:
		e.Code = rulecode.UnfencedDenied
		e.Reason = "sqlfence.Unfenced was used but the policy does not allow unfenced writes"
		e.Fix = "set `unfenced: allow` in the policy, or run the write under sqlfence.WithEpoch"
	}
	return e
}

// RefuseArgs is the refusal of a protected write for its arguments: what they are,
// and the fix.
func (d *Decision) RefuseArgs(code, query string, epoch int64, what, fix string) *Error {
	return &Error{Kind: KindRefused, Code: code, Table: d.table(), Epoch: epoch, Statement: query,
		Reason: "a protected write with " + what, Fix: fix}
}
