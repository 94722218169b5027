package check

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// lines maps byte offsets of a source to 1-based lines and columns, columns counted
// in Unicode code points (SARIF's columnKind unicodeCodePoints).
type lines struct {
	src   []byte
	start []int // byte offset of each line's first byte
}

func newLines(src []byte) *lines {
	l := &lines{src: src, start: []int{0}}
	for i, c := range src {
		if c == '\n' {
			l.start = append(l.start, i+1)
		}
	}
	return l
}

func (l *lines) pos(off int) (line, col int) {
	off = min(max(off, 0), len(l.src))
	i, found := slices.BinarySearch(l.start, off)
	if !found {
		i--
	}
	return i + 1, utf8.RuneCount(l.src[l.start[i]:off]) + 1
}

// excerpt returns the statement's text on one line, shortened for display.
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 120
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// runeOffset converts a 0-based character index (PostgreSQL's cursor positions count
// characters) into a byte offset.
func runeOffset(s string, chars int) int {
	n := 0
	for i := range s {
		if n == chars {
			return i
		}
		n++
	}
	return len(s)
}
