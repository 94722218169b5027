package pgbin

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress reports a fetch: a bar redrawn in place on a terminal, one line per step
// elsewhere (a log, go test's output).
type progress struct {
	w        io.Writer
	what     string
	terminal bool
	drawn    bool
}

func newProgress(w io.Writer, what string) *progress {
	if w == nil {
		w = io.Discard
	}
	p := &progress{w: w, what: what}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
			p.terminal = true
		}
	}
	return p
}

func (p *progress) step(msg string) {
	fmt.Fprintf(p.w, "sqlfence: %s: %s\n", p.what, msg)
}

// reader counts what passes through r and, on a terminal, redraws the bar at most
// ten times a second.
func (p *progress) reader(r io.Reader, total int64) io.Reader {
	if !p.terminal {
		return r
	}
	return &countingReader{r: r, total: total, p: p}
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

type countingReader struct {
	r     io.Reader
	n     int64
	total int64
	p     *progress
	last  time.Time
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if now := time.Now(); now.Sub(c.last) > 100*time.Millisecond || err != nil {
		c.last = now
		c.p.drawn = true
		fmt.Fprint(c.p.w, "\r"+bar(c.n, c.total))
	}
	return n, err
}

// bar is one line: "[=====>     ]  41%  12.3/30.1 MB", or the count alone when the
// size is unknown.
func bar(n, total int64) string {
	if total <= 0 {
		return fmt.Sprintf("  %.1f MB", float64(n)/1e6)
	}
	const width = 30
	filled := int(int64(width) * n / total)
	filled = min(filled, width)
	s := strings.Repeat("=", filled)
	if filled < width {
		s += ">" + strings.Repeat(" ", width-filled-1)
	}
	return fmt.Sprintf("  [%s] %3d%%  %.1f/%.1f MB", s, 100*n/total, float64(n)/1e6, float64(total)/1e6)
}
