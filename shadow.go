// Shadow mode's tally: what enforcement would have done, per rule and per statement
// shape, for ShadowReportOf, the connector's periodic summary, and one log line per
// new shape that would have failed.

package sqlfence

import (
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

const (
	// maxShadowShapes bounds the shapes counted one by one; executions of shapes
	// first seen after that are counted in ShadowReport.OtherShapes.
	maxShadowShapes = 200
	// shapeMemoEntries bounds the memory of which text has which shape (a hash of
	// the text to the shape), so a statement's shape is computed once, not per
	// execution; when full it starts again.
	shapeMemoEntries = 4096
	// defaultShadowSummary is how often the summary is logged by default.
	defaultShadowSummary = time.Minute
	// summaryTop is how many rules and shapes a summary line names.
	summaryTop = 5
)

// ShadowReport is what a connector under `enforce: shadow` would have done since it
// was made: every count is of statements that were sent as the application wrote them.
type ShadowReport struct {
	Since      time.Time
	Statements uint64 // statements decided (as observed: see Event)
	Fence      uint64 // would have been sent with the fence
	Refuse     uint64 // would have been refused (ErrRefused)
	Unfenced   uint64 // would have failed for want of an epoch (ErrUnfenced)
	LetThrough uint64 // sent unfenced under sqlfence.Unfenced, as enforcement would too

	// Rules counts the statements that would have been refused or failed unfenced,
	// and the writes let through, per rule code, most frequent first.
	Rules []RuleCount
	// Shapes counts the statements that would have been fenced, refused or failed,
	// per statement shape (the text with its constants and comments left out),
	// most frequent first. At most 200 shapes are counted one by one; OtherShapes
	// counts the executions of the shapes seen after that.
	Shapes      []ShapeCount
	OtherShapes uint64
}

// RuleCount is how many statements one rule code would have stopped.
type RuleCount struct {
	Code    string
	Outcome Outcome // OutcomeRefuse, OutcomeUnfenced or OutcomeLetThrough
	Count   uint64
}

// ShapeCount is one statement shape in a [ShadowReport].
type ShapeCount struct {
	Shape   string  // a hash of the statement's tokens, constants and comments left out
	Outcome Outcome // OutcomeFence, OutcomeRefuse, OutcomeUnfenced or OutcomeLetThrough
	Code    string  // the rule code, "" for OutcomeFence
	Table   string
	Example string // the first statement of this shape, abbreviated
	Count   uint64
}

// ShadowReportOf reports what a connector made by NewConnector (or the registered
// driver's OpenConnector) under `enforce: shadow` would have done. ok is false for any
// other connector, and under `enforce: on`.
func ShadowReportOf(c driver.Connector) (r ShadowReport, ok bool) {
	fc, ok := c.(*connector)
	if !ok || fc.cfg.shadow == nil {
		return ShadowReport{}, false
	}
	return fc.cfg.shadow.report(), true
}

type shadowTally struct {
	since  time.Time
	every  time.Duration
	next   atomic.Int64 // UnixNano after which the next summary is due
	counts [OutcomeChecked + 1]atomic.Uint64

	mu     sync.Mutex
	rules  map[ruleKey]uint64
	shapes map[shapeKey]*ShapeCount
	other  uint64
	memo   map[uint64]string // maphash of a text → its shape
	seed   maphash.Seed
}

type ruleKey struct {
	code    string
	outcome Outcome
}

type shapeKey struct {
	shape, code string
	outcome     Outcome
}

func newShadowTally(every time.Duration) *shadowTally {
	t := &shadowTally{since: time.Now(), every: every, rules: map[ruleKey]uint64{},
		shapes: map[shapeKey]*ShapeCount{}, memo: map[uint64]string{}, seed: maphash.MakeSeed()}
	t.next.Store(t.since.Add(every).UnixNano())
	return t
}

// add counts e, logs a shape that would have failed the first time it is seen, and
// the summary when it is due.
func (t *shadowTally) add(ctx context.Context, log *slog.Logger, e Event) {
	t.counts[e.Outcome].Add(1)
	if e.Outcome != OutcomePass && e.Outcome != OutcomeChecked {
		t.addShape(ctx, log, e)
	}
	if t.every > 0 {
		now := time.Now().UnixNano()
		if next := t.next.Load(); now >= next && t.next.CompareAndSwap(next, now+int64(t.every)) {
			t.logSummary(ctx, log)
		}
	}
}

func (t *shadowTally) addShape(ctx context.Context, log *slog.Logger, e Event) {
	t.mu.Lock()
	if e.Outcome != OutcomeFence {
		t.rules[ruleKey{e.Code, e.Outcome}]++
	}
	h := maphash.String(t.seed, e.Statement)
	shape, ok := t.memo[h]
	if !ok {
		shape = statementShape(e.Statement)
		if len(t.memo) >= shapeMemoEntries {
			clear(t.memo)
		}
		t.memo[h] = shape
	}
	k := shapeKey{shape, e.Code, e.Outcome}
	s := t.shapes[k]
	switch {
	case s != nil:
		s.Count++
		t.mu.Unlock()
		return
	case len(t.shapes) >= maxShadowShapes:
		t.other++
		t.mu.Unlock()
		return
	}
	s = &ShapeCount{Shape: shape, Outcome: e.Outcome, Code: e.Code, Table: e.Table, Example: abbreviate(e.Statement, 200), Count: 1}
	t.shapes[k] = s
	t.mu.Unlock()
	switch e.Outcome {
	case OutcomeRefuse, OutcomeUnfenced:
		msg := "sqlfence shadow: would fail"
		if e.Err != nil {
			log.WarnContext(ctx, msg, "code", e.Code, "table", e.Table, "shape", shape, "error", e.Err.Error())
		} else {
			log.WarnContext(ctx, msg, "code", e.Code, "table", e.Table, "shape", shape, "statement", s.Example)
		}
	case OutcomeFence:
		log.DebugContext(ctx, "sqlfence shadow: would fence", "table", e.Table, "shape", shape, "statement", s.Example)
	}
}

func (t *shadowTally) report() ShadowReport {
	r := ShadowReport{Since: t.since, Fence: t.counts[OutcomeFence].Load(), Refuse: t.counts[OutcomeRefuse].Load(),
		Unfenced: t.counts[OutcomeUnfenced].Load(), LetThrough: t.counts[OutcomeLetThrough].Load()}
	r.Statements = r.Fence + r.Refuse + r.Unfenced + r.LetThrough + t.counts[OutcomePass].Load()
	t.mu.Lock()
	for k, n := range t.rules {
		r.Rules = append(r.Rules, RuleCount{Code: k.code, Outcome: k.outcome, Count: n})
	}
	for _, s := range t.shapes {
		r.Shapes = append(r.Shapes, *s)
	}
	r.OtherShapes = t.other
	t.mu.Unlock()
	slices.SortFunc(r.Rules, func(a, b RuleCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Outcome, b.Outcome))
	})
	slices.SortFunc(r.Shapes, func(a, b ShapeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Shape, b.Shape), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Outcome, b.Outcome))
	})
	return r
}

// logSummary logs the report in one line: the counts, the most frequent rules and
// the most frequent shapes that would have failed.
func (t *shadowTally) logSummary(ctx context.Context, log *slog.Logger) {
	r := t.report()
	var rules, shapes []string
	for _, c := range r.Rules[:min(summaryTop, len(r.Rules))] {
		rules = append(rules, fmt.Sprintf("%s=%d", c.Code, c.Count))
	}
	for _, s := range r.Shapes {
		if len(shapes) == summaryTop {
			break
		}
		if s.Outcome == OutcomeRefuse || s.Outcome == OutcomeUnfenced {
			shapes = append(shapes, fmt.Sprintf("%s %s ×%d: %s", s.Code, s.Table, s.Count, abbreviate(s.Example, 80)))
		}
	}
	log.InfoContext(ctx, "sqlfence shadow: summary", "since", r.Since.Format(time.RFC3339), "statements", r.Statements,
		"would_fence", r.Fence, "would_refuse", r.Refuse, "would_fail_unfenced", r.Unfenced, "let_through", r.LetThrough,
		"rules", strings.Join(rules, " "), "top_failing", strings.Join(shapes, " | "), "other_shapes", r.OtherShapes)
}

// statementShape hashes the statement's tokens with constants replaced and comments
// left out, so that one statement run with different literals is one shape. It only
// scans (the scanner does not recurse); text the scanner rejects is its own shape.
func statementShape(q string) string {
	h := fnv.New64a()
	if len(q) > engine.MaxStatementBytes {
		h.Write([]byte(q))
		return fmt.Sprintf("%016x", h.Sum64())
	}
	scan, err := pgquery.Scan(q)
	if err != nil {
		h.Write([]byte(q))
		return fmt.Sprintf("%016x", h.Sum64())
	}
	for _, tok := range scan.Tokens {
		switch tok.Token {
		case pg.Token_SQL_COMMENT, pg.Token_C_COMMENT:
			continue
		case pg.Token_SCONST, pg.Token_USCONST, pg.Token_ICONST, pg.Token_FCONST, pg.Token_BCONST, pg.Token_XCONST:
			h.Write([]byte{'?'})
		default:
			h.Write([]byte(strings.ToLower(q[tok.Start:tok.End])))
		}
		h.Write([]byte{' '})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
