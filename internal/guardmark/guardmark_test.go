package guardmark

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"inventory":    "inventory",
		"Inventory_2":  "Inventory_2",
		"Odd */ Name":  "%4f6464202a2f204e616d65",
		"a,b":          "%612c62",
		"%41":          "%253431",
		"inventário":   "%696e76656e74c3a172696f",
		"in ventory*/": "%696e2076656e746f72792a2f",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestComment: each name once, encoded, and nothing a name holds can end the comment.
func TestComment(t *testing.T) {
	got := Comment([]string{"inventory", "invoices", "inventory", "x*/ DROP"})
	if want := "/*sqlfence fenced: inventory invoices %782a2f2044524f50*/ "; got != want {
		t.Errorf("Comment = %q, want %q", got, want)
	}
	if !strings.HasPrefix(got, Prefix) || strings.Count(got, "*/") != 1 || !strings.HasPrefix(got, Forged) {
		t.Errorf("Comment = %q", got)
	}
}
