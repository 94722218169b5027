// IN lists of any length as one shape: `sku IN ($2, $3, …, $n)` and `id IN (1, 2, 3, …)`,
// as ORMs build them, are one shape whatever their length, so that a new length
// takes the plan of the first one instead of a full analysis.
//
// Why the decision cannot depend on the length. A shape leaves out the length of a
// run of list elements — single tokens of one kind, all parameters or all literals of
// one kind, separated by commas, directly inside parentheses — and a plan takes a
// text whose run has another length only when the analysed text proved that run the
// value list of an IN: the token before the parenthesis is IN, and the tree holds an
// IN expression (A_Expr of kind AEXPR_IN) whose list is exactly the run's elements,
// each a constant or a parameter, reached from the statement through expression
// positions alone (the positions whose constants a shape masks, shape.go). Then:
//
//   - the grammar reads `IN ( e, …, e )` as one expression list for every length (the
//     one-element list included), so the texts' trees differ only in that list;
//   - every judge (allowlist, functions, operators, writes, claims, the catalog's)
//     finds nothing in a constant or a parameter: no call, no relation, no write, and
//     the IN operator's operands are of the same kinds for every length;
//   - the parser's bound (pgtree.Measure) counts nothing for constants, parameters and
//     the commas between list items: the measure, and the refusal for depth, are the
//     same for every length;
//   - the fence's edits sit outside the list (a plan whose edit falls inside a run
//     does not collapse it) and are anchored to tokens: those after the list move by
//     two tokens per element (element and comma);
//   - parameters: a text's parameters are collapsed only when they are numbered
//     $1, $2, … in the order they appear, in the analysed text and (the shape says so)
//     in the other: then the other's numbers are fixed by its tokens, its highest is
//     its count, and the epoch parameter, $highest+1, moves with the list's length.
//     The plan writes the new number into the fence's text where it wrote the old one:
//     it collapses parameter lists only when every $ in the fence's text is that
//     epoch reference, and the text holds no quote (no identifier or literal in which
//     a $ could stand for something else).
//
// A run that is not proven — a function's arguments, a row constructor, VALUES, an
// IN list with a call or an expression among its elements, an ANY(ARRAY[…]) — keeps
// its length in the plan, and a text whose run has another length is analysed in full.

package engine

import (
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// listRun is a run of list elements: n elements of one kind from token first on,
// with a comma between each two, directly inside parentheses.
type listRun struct {
	first, n int
	param    bool
}

// last is the token index of the run's last element.
func (l listRun) last() int { return l.first + 2*(l.n-1) }

// listElement reports whether a token can be an element of a run in a text whose
// parameters are numbered in order (seq).
func listElement(k pg.Token, seq bool) bool { return maskable(k) || seq && k == pg.Token_PARAM }

// listRuns finds the runs of toks: after each opening parenthesis, elements of one
// kind separated by commas up to the closing one.
func listRuns(toks []token, seq bool) []listRun {
	var runs []listRun
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].tok != pg.Token_ASCII_40 || !listElement(toks[i+1].tok, seq) {
			continue
		}
		kind, j := toks[i+1].tok, i+1
		for j+2 < len(toks) && toks[j+1].tok == pg.Token_ASCII_44 && toks[j+2].tok == kind {
			j += 2
		}
		if j+1 < len(toks) && toks[j+1].tok == pg.Token_ASCII_41 {
			runs = append(runs, listRun{first: i + 1, n: (j-i)/2 + 1, param: kind == pg.Token_PARAM})
			i = j
		}
	}
	return runs
}

// seqParams reports whether the text's parameters are $1, $2, … in the order they
// appear, each spelled in plain digits.
func seqParams(sql string, toks []token) bool {
	next := 1
	for _, t := range toks {
		if t.tok != pg.Token_PARAM {
			continue
		}
		if sql[t.start+1:t.end] != strconv.Itoa(next) {
			return false
		}
		next++
	}
	return true
}

// planRun is what a plan knows of one run of the analysed text.
type planRun struct {
	n        int  // its length there
	collapse bool // proven an IN list: any length takes the plan
	param    bool
	// edges: for a run of literals it does not collapse, its elements' edge classes
	// (shape.go, edgeClass), which the shape leaves out inside a run: a fence's edit
	// may touch an element there.
	edges string
}

// runEdges is the edge classes of a literal run's elements.
func runEdges(sql string, toks []token, r listRun) string {
	b := make([]byte, 0, 2*r.n)
	for i := r.first; i <= r.last(); i += 2 {
		if t := toks[i]; t.end > t.start {
			b = append(b, edgeClass(sql[t.start]), edgeClass(sql[t.end-1]))
		}
	}
	return string(b)
}

// planRuns decides, for each run of the analysed text, whether the plan takes any
// length of it (see the file's comment). inLists maps the location of an IN list's
// first element to its length, for the lists of constants and parameters in value
// positions (valueConstants).
func planRuns(sql string, toks []token, runs []listRun, inLists map[int32]int, edits []edit, epochParam int) []planRun {
	out := make([]planRun, len(runs))
	paramsMove := epochParam == 0 || epochOnly(edits, epochParam)
	for i, r := range runs {
		out[i] = planRun{n: r.n, param: r.param}
		out[i].collapse = r.first >= 2 && toks[r.first-2].tok == pg.Token_IN_P && inLists[int32(toks[r.first].start)] == r.n &&
			(!r.param || paramsMove) && !slices.ContainsFunc(edits, func(e edit) bool { return e.tok >= r.first && e.tok <= r.last() })
		if !out[i].collapse && !r.param {
			out[i].edges = runEdges(sql, toks, r)
		}
	}
	return out
}

// epochOnly reports whether every $ in the edits' text is the epoch reference
// $epochParam::bigint, with no quote anywhere in them: the text the plan may
// renumber by replacing that reference.
func epochOnly(edits []edit, epochParam int) bool {
	ref := epochRef(epochParam)
	for _, e := range edits {
		if strings.ContainsAny(e.text, `"'`) || strings.Count(e.text, "$") != strings.Count(e.text, ref) {
			return false
		}
	}
	return true
}

func epochRef(n int) string { return "$" + strconv.Itoa(n) + "::bigint" }

// shiftRuns compares a text's runs with the plan's: ok when every run the plan does
// not collapse has its length, and then the number of tokens each run adds (moved[i]
// for the plan's run i: two per element more) and how many parameters they add.
func shiftRuns(sql string, toks []token, plan []planRun, runs []listRun) (moved []int, params int, ok bool) {
	if len(plan) != len(runs) {
		return nil, 0, false
	}
	moved = make([]int, len(runs))
	for i, r := range runs {
		d := r.n - plan[i].n
		if d != 0 && !plan[i].collapse || plan[i].edges != "" && runEdges(sql, toks, r) != plan[i].edges {
			return nil, 0, false
		}
		moved[i] = 2 * d
		if r.param {
			params += d
		}
	}
	return moved, params, true
}

// shiftedToken maps a token index of the analysed text to the other text's, given
// the plan's runs (in the analysed text's positions) and how much each moved.
func shiftedToken(tok int, first []int, moved []int) int {
	out := tok
	for i, f := range first {
		if f < tok {
			out += moved[i]
		}
	}
	return out
}
