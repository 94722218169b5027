package sqlfence

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

func primary(tl int64, lsn uint64) pgcatalog.Position {
	return pgcatalog.Position{System: "7300000000000000001", Timeline: tl, LSN: lsn}
}

func standby(tl int64, lsn uint64) pgcatalog.Position {
	p := primary(tl, lsn)
	p.Standby = true
	return p
}

// TestHistoryAdmit: the connector's memory of positions, on synthetic positions — what
// is refused and with which code, and what each admitted position teaches it.
func TestHistoryAdmit(t *testing.T) {
	other := primary(5, 1<<40)
	other.System = "7300000000000000999"
	noSystem := primary(1, 0x3000200)
	noSystem.System = ""
	steps := []struct {
		name string
		p    pgcatalog.Position
		want string // "" admitted, else the code
	}{
		{"the first primary", primary(1, 0x3000060), ""},
		{"the same primary further on", primary(1, 0x3000100), ""},
		{"a primary on the same timeline behind WAL already seen (another session on it read its position first)", primary(1, 0x3000000), ""},
		{"a standby on the same timeline, lagging", standby(1, 0x1000000), ""},
		{"a standby whose timeline is unknown", standby(0, 0), ""},
		{"a primary of another cluster", other, rulecode.OtherCluster},
		{"a role that cannot read the system identifier", noSystem, ""},
		{"the promoted standby: a newer timeline, its WAL from the fork on", primary(2, 0x3000080), ""},
		{"the old primary restarted: an older timeline, more WAL", primary(1, 0x9000000), rulecode.BehindHistory},
		{"a standby still on the old timeline", standby(1, 0x9000000), rulecode.BehindHistory},
		{"a standby that followed the promotion, lagging", standby(2, 0x1000), ""},
		{"a standby ahead on a newer timeline than any primary seen", standby(3, 0x1000), ""},
		{"the primary of timeline 2 is now behind timeline 3 (seen on a standby)", primary(2, 0x9000000), rulecode.BehindHistory},
		{"the primary of timeline 3, at any WAL position (no primary seen on it yet)", primary(3, 0x10), ""},
		{"a primary of timeline 3 behind WAL seen on it: timelines alone are compared", primary(3, 0x08), ""},
		{"a position with no timeline (unknown) is never refused", pgcatalog.Position{System: "7300000000000000001", Standby: true}, ""},
	}
	var h history
	for _, s := range steps {
		err := h.admit(s.p)
		got := ""
		if err != nil {
			got = err.Code
			if !errors.Is(err, ErrRefused) {
				t.Errorf("%s: %v is not ErrRefused", s.name, err)
			}
			if p := s.p.String(); !strings.Contains(err.Error(), p) {
				t.Errorf("%s: the message does not name the session's position %q: %v", s.name, p, err)
			}
		}
		if got != s.want {
			t.Errorf("%s (%s): got %q (%v), want %q", s.name, s.p, got, err, s.want)
		}
	}
	if got, want := h.highest(), (pgcatalog.Position{Timeline: 3, LSN: 0x10}); got != want {
		t.Errorf("highest = %+v, want %+v", got, want)
	}
	if h.system != "7300000000000000001" {
		t.Errorf("system = %q", h.system)
	}
}

// TestHistoryMessages: the messages name both positions and the fix.
func TestHistoryMessages(t *testing.T) {
	var h history
	if err := h.admit(primary(2, 0x5000110)); err != nil {
		t.Fatal(err)
	}
	err := h.admit(primary(1, 0x3000060))
	for _, want := range []string{"refused [SF707]", "primary on timeline 1 at 0/3000060", "behind timeline 2 at 0/5000110", "old primary", "Patroni's watchdog", "pg_rewind", "new connector or pool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q: %v", want, err)
		}
	}
	o := primary(2, 0x5000110)
	o.System = "42"
	err = h.admit(o)
	for _, want := range []string{"refused [SF708]", "system identifier 42", "system identifier 7300000000000000001", "timeline 2 at 0/5000110", "new connector or pool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q: %v", want, err)
		}
	}
	err = earlyCommitError(pgcatalog.Session{Position: primary(2, 1), SynchronousCommit: "local"})
	for _, want := range []string{"refused [SF709]", "synchronous_commit is local", "ALTER ROLE … RESET synchronous_commit", "on, remote_apply or remote_write"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q: %v", want, err)
		}
	}
}

// TestSessionCheckStale: a session accepted on a primary is refused once a newer
// timeline was seen; one on the newest timeline is not.
func TestSessionCheckStale(t *testing.T) {
	var h history
	old := primary(1, 0x100)
	if err := h.admit(old); err != nil {
		t.Fatal(err)
	}
	chk := &sessionCheck{h: &h, pos: old}
	if err := chk.stale(); err != nil {
		t.Fatalf("before the promotion: %v", err)
	}
	if err := h.admit(primary(2, 0x200)); err != nil {
		t.Fatal(err)
	}
	err := chk.stale()
	if err == nil || err.Code != rulecode.BehindHistory || !strings.Contains(err.Error(), "since this session was opened") {
		t.Fatalf("after the promotion: %v, want SF707", err)
	}
	if err := (&sessionCheck{h: &h, pos: primary(2, 0x200)}).stale(); err != nil {
		t.Fatalf("a session on the new primary: %v", err)
	}
	if err := (*sessionCheck)(nil).stale(); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryConcurrent: admitted concurrently, in any order, the memory ends at the
// highest position, never lower, and a position is refused only when it is behind
// one admitted (run with -race).
func TestHistoryConcurrent(t *testing.T) {
	var h history
	var wg sync.WaitGroup
	const workers, each = 16, 200
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				tl := int64(1 + (w+i)%4)
				p := primary(tl, uint64(i)<<20|uint64(w))
				if i%3 == 0 {
					p = standby(tl, uint64(i))
				}
				if err := h.admit(p); err != nil {
					if err.Code != rulecode.BehindHistory {
						errs <- fmt.Errorf("%s: %v", p, err)
					}
					continue
				}
				if got := h.timeline.Load(); got < tl {
					errs <- fmt.Errorf("admitted %s, but the timeline read %d", p, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	high := h.highest()
	if high.Timeline != 4 || h.timeline.Load() != 4 {
		t.Fatalf("highest = %+v, timeline %d; want timeline 4", high, h.timeline.Load())
	}
	// Whatever primary of timeline 4 was admitted last, nothing admitted is above it.
	if err := h.admit(primary(4, high.LSN)); err != nil {
		t.Errorf("the highest position itself: %v", err)
	}
	// Sessions on one primary read its WAL position in an order the connector cannot
	// see: one just behind the highest is the same server, read a moment earlier.
	if err := h.admit(primary(4, high.LSN-1)); err != nil {
		t.Errorf("a primary just behind the highest on its timeline: %v", err)
	}
}
