package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README links into the guides and the guides into each other by heading
// anchors; a section moved or renamed must not leave a link pointing nowhere.

// linkRE matches an inline link [text](target) or image ![alt](target); the target
// stops at a space (an optional "title" follows) or the closing parenthesis.
var linkRE = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// anchorRE matches an explicit HTML anchor, as the rule codes table uses.
var anchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)

var headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// prose returns the lines of a Markdown document outside fenced code blocks, with
// their numbers (1-based): a heading or a link inside a code block is not one.
func prose(src string) (lines []string, numbers []int) {
	fence := ""
	for i, l := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		lines = append(lines, l)
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

var codeSpanRE = regexp.MustCompile("`[^`]*`")

// slug is GitHub's anchor for a heading's text: the text as rendered (code spans
// keep their content, links their text, HTML tags go), lower-cased, every
// character but letters (and their combining marks), digits, spaces, hyphens and
// underscores dropped, and each space made a hyphen.
func slug(heading string) string {
	s := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	s = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(s, "")
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r), unicode.IsMark(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors are the fragments a document defines: one per heading (a repeated
// heading gets -1, -2, … as on GitHub) and one per explicit <a id>.
func anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := prose(src)
	for _, l := range lines {
		if m := headingRE.FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "    ") {
			s := slug(m[1])
			if n, ok := seen[s]; ok {
				seen[s] = n + 1
				s += "-" + strconv.Itoa(n+1)
			} else {
				seen[s] = 0
			}
			out[s] = true
		}
		for _, m := range anchorRE.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// TestLinks: every relative link of the README and the guides names a file of
// the repository, and every fragment a heading or anchor of the document it
// points into.
func TestLinks(t *testing.T) {
	docs := map[string]map[string]bool{} // document (slash path from the root) → anchors
	anchorsOf := func(doc string) (map[string]bool, error) {
		if a, ok := docs[doc]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			return nil, err
		}
		docs[doc] = anchors(string(data))
		return docs[doc], nil
	}
	checked := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := prose(string(data))
		for i, l := range lines {
			// A link written inside a code span is text, not a link.
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				doc := file
				if path != "" {
					doc = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), filepath.FromSlash(path))))
					if doc == ".." || strings.HasPrefix(doc, "../") || filepath.IsAbs(path) {
						t.Errorf("%s:%d: %s points outside the repository", file, numbers[i], target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(doc))); err != nil {
						t.Errorf("%s:%d: %s: no such file %s", file, numbers[i], target, doc)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(doc, ".md") {
					t.Errorf("%s:%d: %s: a fragment into %s, which is not a Markdown document", file, numbers[i], target, doc)
					continue
				}
				a, err := anchorsOf(doc)
				if err != nil {
					t.Errorf("%s:%d: %v", file, numbers[i], err)
					continue
				}
				if !a[frag] {
					t.Errorf("%s:%d: %s: %s has no heading or anchor #%s", file, numbers[i], target, doc, frag)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the link pattern is broken")
	}
}

// TestGuidesListed: every guide under docs/ is linked from the README, so that a
// reader who starts there can reach it.
func TestGuidesListed(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	lines, _ := prose(string(data))
	for _, l := range lines {
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, ""), -1) {
			path, _, _ := strings.Cut(m[1], "#")
			linked[filepath.ToSlash(filepath.Clean(path))] = true
		}
	}
	for _, file := range docFiles(t)[1:] {
		if !linked[file] {
			t.Errorf("README.md links to no part of %s: add it to the guides", file)
		}
	}
}

// TestSlug pins the anchor rule on headings of the guides and GitHub's own cases.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The Go analyzer (`sqlfence-vet`)":       "the-go-analyzer-sqlfence-vet",
		"Metrics and traces (OpenTelemetry)":     "metrics-and-traces-opentelemetry",
		"With your ORM, query builder or queue":  "with-your-orm-query-builder-or-queue",
		"`stale: row` or `stale: claim`":         "stale-row-or-stale-claim",
		"resolve: catalog":                       "resolve-catalog",
		"Checking a deployment: sqlfence doctor": "checking-a-deployment-sqlfence-doctor",
		"The `sqlfence` command":                 "the-sqlfence-command",
		"snake_case and [a link](x.md) <b>x</b>": "snake_case-and-a-link-x",
		"Ünïcode — dash":                         "ünïcode--dash",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := anchors("# A\n\n## A\n\n```\n# not a heading\n```\n\n## A\n<a id=\"sf101\"></a>\n")
	for _, want := range []string{"a", "a-1", "a-2", "sf101"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchors: a comment in a code block taken for a heading")
	}
}

// TestTestCommand: .ci/run runs "the README's test command, exactly"; the README
// keeps it as a block of its own.
func TestTestCommand(t *testing.T) {
	_, blocks := readBlocks(t, "README.md")
	for _, b := range blocks {
		if b.lang == "sh" && b.text == "go test ./...\n" {
			return
		}
	}
	t.Error("README.md has no ```sh block that is exactly `go test ./...`, the command .ci/run runs")
}
