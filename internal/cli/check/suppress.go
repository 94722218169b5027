package check

import (
	"regexp"
	"strings"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// ignoreMarker is the suppression comment's keyword.
const ignoreMarker = "sqlfence:ignore"

// parseIgnore reads a comment (with its delimiters: --, //, /* */) and reports
// whether it is a suppression — a comment that starts with the marker — and the
// reason it gives.
func parseIgnore(comment string) (reason string, ok bool) {
	body := comment
	for _, open := range []string{"--", "//", "/*"} {
		if strings.HasPrefix(body, open) {
			body = body[len(open):]
			break
		}
	}
	body = strings.TrimSuffix(body, "*/")
	body = strings.TrimLeft(body, " \t\r\n-*/")
	rest, found := strings.CutPrefix(body, ignoreMarker)
	if !found {
		return "", false
	}
	if rest != "" && !strings.ContainsAny(rest[:1], " \t\r\n") {
		return "", false // sqlfence:ignored, sqlfence:ignore-foo: not the marker
	}
	return strings.TrimSpace(rest), true
}

// ruleCode is a rule code as a suppression may name it.
var ruleCode = regexp.MustCompile(`^SF[0-9]{3}$`)

// ParseIgnore reads a comment (with its delimiters) as sqlfence:ignore: whether it
// is one, the rule code it is limited to when its first word is one ("" for every
// rule: `sqlfence:ignore SF301 nightly reset` suppresses only SF301), and the reason
// after it. The Go analyzer (contrib/analyzer) reads its comments with it too.
func ParseIgnore(comment string) (code, reason string, ok bool) {
	reason, ok = parseIgnore(comment)
	if !ok {
		return "", "", false
	}
	first, rest, _ := strings.Cut(reason, " ")
	if ruleCode.MatchString(first) {
		return first, strings.TrimSpace(rest), true
	}
	return "", reason, true
}

// suppression is one sqlfence:ignore comment in a file.
type suppression struct {
	file      string
	line, col int
	endLine   int
	endCol    int
	code      string // the rule it is limited to; "" for every rule
	reason    string
	used      bool
}

// covers says whether the suppression applies to a finding of rule.
func (s *suppression) covers(rule string) bool { return s.code == "" || s.code == rule }

// settle reports the suppressions that need a finding of their own: a missing reason,
// or nothing suppressed.
func settle(res *result, sups []*suppression) {
	for _, s := range sups {
		f := finding{File: s.file, Line: s.line, Column: s.col, EndLine: s.endLine, EndColumn: s.endCol}
		switch {
		case s.reason == "":
			f.Rule = rulecode.CheckIgnoreNoWhy
			f.Message = "sqlfence:ignore needs a reason: say why this write is safe, e.g. `sqlfence:ignore one-off repair after INC-1234, run under the guard override`"
		case !s.used:
			f.Rule = rulecode.CheckUnusedIgnore
			f.Message = "sqlfence:ignore suppresses nothing: it must come directly before a statement with a finding (in Go: on the line of a checked call or the line before it)"
		default:
			continue
		}
		res.Findings = append(res.Findings, f)
	}
}

// report files a finding, or a suppressed finding when a suppression with a reason
// covers it.
func report(res *result, f finding, sup *suppression) {
	if sup != nil {
		sup.used = true
		if sup.reason != "" {
			f.Reason = sup.reason
			res.Suppressed = append(res.Suppressed, f)
			return
		}
	}
	res.Findings = append(res.Findings, f)
}
