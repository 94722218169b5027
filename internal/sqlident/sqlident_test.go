package sqlident

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"inventory":  "inventory",
		"Inventory":  `"Inventory"`,
		"select":     `"select"`,
		"a b":        `"a b"`,
		`say"hi`:     `"say""hi"`,
		"_x1$":       "_x1$",
		"1x":         `"1x"`,
		"":           `""`,
		"écrit":      `"écrit"`,
		"user_table": "user_table",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := QuoteQualified("billing", "Invoices"); got != `billing."Invoices"` {
		t.Errorf("QuoteQualified = %s", got)
	}
	if got := Literal("it's"); got != "'it''s'" {
		t.Errorf("Literal = %s", got)
	}
}

func TestSplit(t *testing.T) {
	long := strings.Repeat("a", 70)
	for in, want := range map[string]string{
		"Inventory":             "inventory",
		`billing."Invoices"`:    "billing|Invoices",
		`"a.b"`:                 "a.b",
		`"say""hi"`:             `say"hi`,
		long:                    strings.Repeat("a", MaxBytes),
		"ÉCRIT":                 "Écrit", // only ASCII letters fold
		"public.InVenTory":      "public|inventory",
		strings.Repeat("é", 40): strings.Repeat("é", 31), // cut on a character boundary
	} {
		parts, err := Split(in)
		if err != nil {
			t.Errorf("Split(%q): %v", in, err)
			continue
		}
		if got := strings.Join(parts, "|"); got != want {
			t.Errorf("Split(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", ".", "a.", ".a", `"`, `""`, `"a"b`, "a b", "1a", "a-b", "a\u200bb"} {
		if _, err := Split(bad); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}

func TestFold(t *testing.T) {
	if got := Fold("InVentory_É"); got != "inventory_É" {
		t.Errorf("Fold = %q", got)
	}
	if s := "already"; Fold(s) != s {
		t.Error("Fold changed a lower-case string")
	}
}
