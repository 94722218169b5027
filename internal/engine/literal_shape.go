// The literal form of a decision by shape, checked once per plan: a new inlined text
// of a known shape gets its literal epoch without a scan of its own.

package engine

import (
	"slices"
	"strings"
)

// planLiteral returns d's literal form for epoch when d was derived from a plan
// (shape.go) whose literal form was checked on a text of the plan, with an epoch of
// the same literalKind; the first text of each kind is checked here. ok is false
// when the plan's form did not hold, and the caller then takes Literal's own check.
//
// Why a text of the plan needs no scan of its own. Let T0 be the text of the plan on
// which literalScan held for kind k, and T1 another, with F0 and F1 their fenced
// texts with the digits of epochs E0 and E1 of kind k at the plan's epoch positions.
//
//  1. The positions are where the fence's text was put. epochOffsets takes them
//     from the plan's edits, the rewriter's own insertions (fencetext.go): the
//     fence's text with names from the policy or identifiers of the text (an alias),
//     which the shape key holds byte for byte, so every text of the plan gets the
//     same edits' texts. Each position is an epoch token "$1::bigint" lying wholly
//     inside one edit's text, not at its first byte; epochPositions places it in the
//     derived text by where applyEdits wrote that edit, so a "$1::bigint" inside
//     T1's own literals is never cut and stays in its string. A position inside a
//     quoted name of an edit is the same in every text of the plan, and the check
//     on T0 fails on it.
//  2. F1 reads as F0 but for the masked values and the digits. The plan applies to
//     T1 because T1 lexes with the plan's edits as T0 did (shape.go: every token's
//     kind and text but the masked literals', their edge classes, which tokens
//     touch): the shape key decides how the application's tokens meet the edits'
//     first and last bytes, and nothing else of the edits. The digits replace $1
//     strictly inside an edit's text and are followed there by "::bigint", so the
//     edits' first and last bytes are those of the decided edits, and F1's
//     application tokens meet them as V1's, hence as F0's, do. Inside an edit the
//     bytes are the same in F0 and F1 but for the digits, and by Literal's point 1
//     (a longest-match lexer in its initial state at each token boundary, the digits
//     apart from the token before and followed by ':') a run of digits of one kind
//     is one token of that kind whichever digits it holds.
//  3. So F1's tokens are F0's with other masked values and other digits of the same
//     kind: each run of digits is one integer token of kind k, directly followed by
//     "::" and apart from the token before it, and F1 has no parameter token (T1's
//     tokens have T0's kinds, and F0 had none) — point 1 of Literal, established on
//     F0 by literalScan. Points 2 and 3 then hold for F1 as for any text that
//     passes point 1: V1 is the decided text (the plan's derivation of it is the
//     decision), each of its $1 is the fence's "$1::bigint".
//
// A plan whose first check fails keeps failing here, and each of its texts takes
// Literal's own check.
func (d *Decision) planLiteral(epoch int64) (string, bool) {
	p, k := d.fromPlan, literalKind(epoch)
	for _, at := range d.epochAt {
		if !strings.HasPrefix(d.sql[at:], epochToken) {
			return "", false // not where the plan put it: fail closed
		}
	}
	switch p.literal[k].Load() {
	case 2:
		return "", false
	case 0:
		ok := literalScan(cutAt(d.sql, d.epochAt), epoch)
		state := int32(2)
		if ok {
			state = 1
		}
		p.literal[k].CompareAndSwap(0, state)
		if !ok {
			return "", false
		}
	}
	return withEpoch(cutAt(d.sql, d.epochAt), epoch), true
}

// epochOffsets returns where the fence's epoch tokens are in edits' texts: every
// "$1::bigint" in an edit's text but at its first byte. nil when the epoch is not $1.
func epochOffsets(edits []edit, epochParam int) []editOffset {
	if epochParam != 1 {
		return nil
	}
	var at []editOffset
	for i, e := range edits {
		for off := 0; ; {
			j := strings.Index(e.text[off:], epochToken)
			if j < 0 {
				break
			}
			j += off
			if j > 0 {
				at = append(at, editOffset{i, j})
			}
			off = j + len(epochToken)
		}
	}
	return at
}

// epochPositions places offsets in the text applyEdits wrote, edit i's text at
// base+starts[i], in order.
func epochPositions(offsets []editOffset, starts []int, base int) []int {
	at := make([]int, len(offsets))
	for i, o := range offsets {
		at[i] = base + starts[o.edit] + o.off
	}
	slices.Sort(at)
	return at
}

// cutAt cuts v at the epoch tokens beginning at at, as literalCuts does.
func cutAt(v string, at []int) []string {
	parts := make([]string, 0, len(at)+1)
	last := 0
	for _, i := range at {
		parts = append(parts, v[last:i])
		last = i + len("$1")
	}
	return append(parts, v[last:])
}
