package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/nopdriver"
)

func mustPolicy(tb testing.TB, src string) *Policy {
	tb.Helper()
	p, err := ParsePolicy([]byte(src), "<test>")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestCacheStatsOf: the public view of a connector's cache counts what the
// connections decided.
func TestCacheStatsOf(t *testing.T) {
	c := NewConnector(nopdriver.Connector{}, mustPolicy(t, `
version: 1
tables:
  - name: inventory
resolve: none # nopdriver has no catalog
`))
	cn, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithEpoch(context.Background(), 7)
	exec := cn.(driver.ExecerContext)
	for range 3 {
		for _, q := range []string{`UPDATE inventory SET quantity = 1`, `SELECT 1`} {
			if _, err := exec.ExecContext(ctx, q, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, ok := CacheStatsOf(c)
	if !ok {
		t.Fatal("CacheStatsOf: not a sqlfence connector")
	}
	// Two texts, and the plans for their shapes.
	if st.Hits != 4 || st.Misses != 2 || st.Entries != 4 || st.MaxEntries != engine.DefaultCacheEntries || st.Bytes <= 0 {
		t.Fatalf("stats %+v, want 4 hits, 2 misses, 4 entries", st)
	}
	if r := st.HitRate(); r < 0.66 || r > 0.67 {
		t.Fatalf("hit rate %v, want 4/6", r)
	}
	if _, ok := CacheStatsOf(nopdriver.Connector{}); ok {
		t.Fatal("CacheStatsOf accepted a connector that is not sqlfence's")
	}
}

// TestSentinelTexts: the engine spells an error's kind with the text of the sentinel
// the front maps it to, so an error reads the same whichever side formats it.
func TestSentinelTexts(t *testing.T) {
	for k, sentinel := range kindSentinel {
		if sentinel == nil {
			continue
		}
		if got := engine.KindText(engine.Kind(k)); got != sentinel.Error() {
			t.Errorf("kind %d: engine spells %q, the sentinel is %q", k, got, sentinel.Error())
		}
		e := &engine.Error{Kind: engine.Kind(k), Code: "SF999", Table: "t", Epoch: 3, Reason: "r", Fix: "f", Statement: "s"}
		if pub := publicError(e); pub.Error() != e.Error() || !errors.Is(pub, sentinel) {
			t.Errorf("kind %d: %q converts to %q", k, e.Error(), pub.Error())
		}
	}
}
