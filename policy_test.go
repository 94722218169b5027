package sqlfence

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/engine"
)

func policyTestdata(name string) string { return filepath.Join("testdata", "policy", name) }

// examplePolicyTables is what testdata/policy/valid.yaml and valid.json declare.
func examplePolicyTables() []Table {
	return []Table{
		{QualifiedName: QualifiedName{Name: "inventory"}, EpochColumn: "writer_epoch", Mode: ModeStrict},
		{QualifiedName: QualifiedName{Schema: "billing", Name: "invoices"}, EpochColumn: "writer_epoch", Mode: ModeRepeatable},
		{QualifiedName: QualifiedName{Name: "reports"}, EpochColumn: "fence_epoch", Mode: ModeStrict},
	}
}

func TestLoadPolicyExample(t *testing.T) {
	tests := []struct {
		file  string
		lines []int
	}{
		{"valid.yaml", []int{6, 7, 9}},
		{"valid.json", []int{6, 7, 8}}, // tab-indented JSON: YAML allows tabs inside flow collections
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := policyTestdata(tt.file)
			p, err := LoadPolicy(path)
			if err != nil {
				t.Fatal(err)
			}
			want := examplePolicyTables()
			for i := range want {
				want[i].Line = tt.lines[i]
			}
			if p.Source != path {
				t.Errorf("Source = %q, want %q", p.Source, path)
			}
			if p.EpochColumn != "writer_epoch" || p.Mode != ModeStrict || p.AllowUnfenced || p.Enforce != EnforceOn {
				t.Errorf("settings = %q %v unfenced=%v %v", p.EpochColumn, p.Mode, p.AllowUnfenced, p.Enforce)
			}
			if !reflect.DeepEqual(p.Tables, want) {
				t.Errorf("Tables =\n%+v\nwant\n%+v", p.Tables, want)
			}
			if wantF := []QualifiedName{{"billing", "recalc"}}; !reflect.DeepEqual(p.Functions, wantF) {
				t.Errorf("Functions = %+v, want %+v", p.Functions, wantF)
			}
		})
	}
}

func TestParsePolicySettings(t *testing.T) {
	tests := []struct {
		name          string
		in            string
		epochColumn   string
		mode          Mode
		allowUnfenced bool
		enforce       Enforcement
		tables        []Table
		functions     []QualifiedName
	}{
		{
			name:        "defaults",
			in:          "version: 1\ntables:\n  - name: inventory\n",
			epochColumn: "writer_epoch", mode: ModeStrict, enforce: EnforceOn,
			tables: []Table{{QualifiedName: QualifiedName{Name: "inventory"}, EpochColumn: "writer_epoch", Mode: ModeStrict, Line: 3}},
		},
		{
			name: "policy defaults flow into tables, table settings override",
			in: `version: 1
epoch_column: Fence_Epoch
mode: repeatable
unfenced: allow
enforce: shadow
tables:
  - name: a
  - name: b
    mode: strict
  - name: c
    epoch_column: '"Own Epoch"'
functions: []
`,
			epochColumn: "fence_epoch", mode: ModeRepeatable, allowUnfenced: true, enforce: EnforceShadow,
			tables: []Table{
				{QualifiedName: QualifiedName{Name: "a"}, EpochColumn: "fence_epoch", Mode: ModeRepeatable, Line: 7},
				{QualifiedName: QualifiedName{Name: "b"}, EpochColumn: "fence_epoch", Mode: ModeStrict, Line: 8},
				{QualifiedName: QualifiedName{Name: "c"}, EpochColumn: "Own Epoch", Mode: ModeRepeatable, Line: 10},
			},
			functions: []QualifiedName{},
		},
		{
			name:        "JSON on one line",
			in:          `{"version": 1, "mode": "repeatable", "tables": [{"name": "public.t"}, "u"], "functions": ["f", "s.g"]}`,
			epochColumn: "writer_epoch", mode: ModeRepeatable, enforce: EnforceOn,
			tables: []Table{
				{QualifiedName: QualifiedName{"public", "t"}, EpochColumn: "writer_epoch", Mode: ModeRepeatable, Line: 1},
				{QualifiedName: QualifiedName{Name: "u"}, EpochColumn: "writer_epoch", Mode: ModeRepeatable, Line: 1},
			},
			functions: []QualifiedName{{Name: "f"}, {"s", "g"}},
		},
		{
			name:        "scalar shorthand and an empty functions key",
			in:          "version: 1\ntables:\n  - inventory\n  - Billing.Invoices\nfunctions:\n",
			epochColumn: "writer_epoch", mode: ModeStrict, enforce: EnforceOn,
			tables: []Table{
				{QualifiedName: QualifiedName{Name: "inventory"}, EpochColumn: "writer_epoch", Mode: ModeStrict, Line: 3},
				{QualifiedName: QualifiedName{"billing", "invoices"}, EpochColumn: "writer_epoch", Mode: ModeStrict, Line: 4},
			},
		},
		{
			name:        "anchors and aliases",
			in:          "version: 1\nmode: &m repeatable\ntables:\n  - name: t\n    mode: *m\n",
			epochColumn: "writer_epoch", mode: ModeRepeatable, enforce: EnforceOn,
			tables: []Table{{QualifiedName: QualifiedName{Name: "t"}, EpochColumn: "writer_epoch", Mode: ModeRepeatable, Line: 4}},
		},
		{
			name:        "explicit unfenced deny and enforce on",
			in:          "version: 1\nunfenced: deny\nenforce: on\ntables: [t]\n",
			epochColumn: "writer_epoch", mode: ModeStrict, enforce: EnforceOn,
			tables: []Table{{QualifiedName: QualifiedName{Name: "t"}, EpochColumn: "writer_epoch", Mode: ModeStrict, Line: 4}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.in), "")
			if err != nil {
				t.Fatal(err)
			}
			if p.Source != "<inline>" {
				t.Errorf("Source = %q, want <inline>", p.Source)
			}
			if p.EpochColumn != tt.epochColumn {
				t.Errorf("EpochColumn = %q, want %q", p.EpochColumn, tt.epochColumn)
			}
			if p.Mode != tt.mode {
				t.Errorf("Mode = %v, want %v", p.Mode, tt.mode)
			}
			if p.AllowUnfenced != tt.allowUnfenced {
				t.Errorf("AllowUnfenced = %v, want %v", p.AllowUnfenced, tt.allowUnfenced)
			}
			if p.Enforce != tt.enforce {
				t.Errorf("Enforce = %v, want %v", p.Enforce, tt.enforce)
			}
			if !reflect.DeepEqual(p.Tables, tt.tables) {
				t.Errorf("Tables =\n%+v\nwant\n%+v", p.Tables, tt.tables)
			}
			if !reflect.DeepEqual(p.Functions, tt.functions) {
				t.Errorf("Functions = %#v, want %#v", p.Functions, tt.functions)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	const v1 = "version: 1\n"
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error, after the "sqlfence: policy p.yaml" prefix
	}{
		{"empty file", "", []string{": file is empty"}},
		{"only comments", "# nothing yet\n", []string{": file is empty"}},
		{"only a document marker", "---\n", []string{": file is empty"}},
		{"yaml syntax", v1 + "tables:\n  - name: a\n mode: strict\n", []string{" line 4: YAML syntax: did not find expected key"}},
		{"yaml tab indentation", v1 + "tables:\n  - name: a\n\tmode: x\n", []string{" line 3: YAML syntax: found a tab character"}},
		{"yaml unclosed flow list", v1 + "tables: [a\nmode: strict\n", []string{" line 2: YAML syntax: did not find expected ',' or ']'"}},
		{"yaml indented key", v1 + "tables: [a]\n  mode: strict\n", []string{" line 3: YAML syntax: did not find expected key"}},
		{"two documents", v1 + "tables: [a]\n---\nversion: 1\n", []string{"line 3: more than one YAML document"}},
		{"top level is a list", "- version: 1\n", []string{"line 1: ", "must be a mapping", "got a list"}},
		{"top level is a string", "inventory\n", []string{"line 1: ", "must be a mapping", `got "inventory"`}},
		{"version missing", "tables: [a]\n", []string{"line 1: version is missing"}},
		{"version 2", "# c\nversion: 2\ntables: [a]\n", []string{"line 2: unsupported version 2"}},
		{"version 2 wins over unknown keys", "version: 2\ntables: [a]\nnew_key: x\n", []string{"line 1: unsupported version 2"}},
		{"version as string", "version: \"1\"\ntables: [a]\n", []string{`line 1: unsupported version "1"`}},
		{"version 1.0", "version: 1.0\ntables: [a]\n", []string{"line 1: unsupported version 1.0"}},
		{"unknown top-level key", v1 + "tables: [a]\nmdoe: strict\n", []string{`line 3: unknown key "mdoe" at top level (known: version, epoch_column, mode, stale, tables, unfenced, enforce, functions, safe_functions, claims, resolve, ddl, catalog_refresh)`}},
		{"unknown table key", v1 + "tables:\n  - name: a\n    mdoe: strict\n", []string{`line 4: unknown key "mdoe" in table entry (known: name, epoch_column, mode, stale)`}},
		{"duplicate top-level key", v1 + "tables: [a]\nmode: strict\nmode: repeatable\n", []string{`line 4: key "mode" given twice at top level (lines 3 and 4)`}},
		{"duplicate table key", v1 + "tables:\n  - name: a\n    name: b\n", []string{`line 4: key "name" given twice in table entry (lines 3 and 4)`}},
		{"non-string key", v1 + "tables: [a]\n? [x]\n: y\n", []string{"line 3: keys at top level must be strings, got a list"}},
		{"tables missing", v1 + "mode: strict\n", []string{"line 1: tables is missing"}},
		{"tables empty list", v1 + "tables: []\n", []string{"line 2: tables is empty"}},
		{"tables without value", v1 + "tables:\n", []string{"line 2: tables is empty"}},
		{"tables is a mapping", v1 + "tables:\n  name: a\n", []string{"line 3: tables must be a list", "got a mapping"}},
		{"tables is a string", v1 + "tables: inventory\n", []string{"line 2: tables must be a list", `got "inventory"`}},
		{"table entry is a list", v1 + "tables:\n  - [a]\n", []string{"line 3: table entry must be a mapping", "got a list"}},
		{"table without name", v1 + "tables:\n  - name: a\n  - mode: strict\n", []string{"line 4: table entry has no name"}},
		{"table name null", v1 + "tables:\n  - name:\n", []string{"line 3: table name must be a string, got no value"}},
		{"table name list", v1 + "tables:\n  - name: [a, b]\n", []string{"line 3: table name must be a string, got a list"}},
		{"bad mode", v1 + "mode: strcit\ntables: [a]\n", []string{`line 2: mode must be one of strict, repeatable; got "strcit"`}},
		{"mode capitalised", v1 + "mode: Strict\ntables: [a]\n", []string{`line 2: mode must be one of strict, repeatable; got "Strict"`}},
		{"bad table mode", v1 + "tables:\n  - name: a\n    mode: loose\n", []string{`line 4: mode must be one of strict, repeatable; got "loose"`}},
		{"mode without value", v1 + "mode:\ntables: [a]\n", []string{"line 2: mode must be one of strict, repeatable; got no value"}},
		{"bad enforce", v1 + "tables: [a]\nenforce: off\n", []string{`line 3: enforce must be one of on, shadow; got "off"`}},
		{"enforce boolean", v1 + "tables: [a]\nenforce: true\n", []string{"line 3: enforce must be one of on, shadow; got true"}},
		{"bad unfenced", v1 + "tables: [a]\nunfenced: yes\n", []string{`line 3: unfenced must be one of deny, allow; got "yes"`}},
		{"unfenced list", v1 + "tables: [a]\nunfenced: [allow]\n", []string{"line 3: unfenced must be one of deny, allow; got a list"}},
		{"duplicate table", v1 + "tables:\n  - name: a\n  - name: b\n  - name: a\n", []string{"line 5: table a is listed twice (lines 3 and 5)"}},
		{"duplicate table after folding", v1 + "tables:\n  - name: S.Inventory\n  - name: '\"s\".inventory'\n", []string{"line 4: table s.inventory is listed twice (lines 3 and 4)"}},
		{"three parts", v1 + "tables:\n  - name: db.s.t\n", []string{`line 3: bad table name "db.s.t": 3 dot-separated parts`}},
		{"empty part", v1 + "tables:\n  - name: s..t\n", []string{`line 3: bad table name "s..t": empty part`}},
		{"leading dot", v1 + "tables:\n  - name: .t\n", []string{`line 3: bad table name ".t": empty part`}},
		{"trailing dot", v1 + "tables:\n  - name: s.\n", []string{`line 3: bad table name "s.": empty part (trailing dot)`}},
		{"empty string name", v1 + "tables:\n  - name: ''\n", []string{`line 3: bad table name "": empty name`}},
		{"unbalanced quote", v1 + "tables:\n  - name: '\"Odd'\n", []string{`line 3: bad table name "\"Odd": unbalanced double quote`}},
		{"text after quoted part", v1 + "tables:\n  - name: '\"a\"b'\n", []string{`line 3: bad table name "\"a\"b": unexpected "b" after a quoted identifier`}},
		{"empty quoted identifier", v1 + "tables:\n  - name: '\"\"'\n", []string{`line 3: bad table name "\"\"": empty quoted identifier`}},
		{"starts with digit", v1 + "tables:\n  - name: 1st\n", []string{`line 3: bad table name "1st": an unquoted identifier cannot start with '1'`}},
		{"starts with dollar", v1 + "tables:\n  - name: $t\n", []string{`line 3: bad table name "$t": an unquoted identifier cannot start with '$'`}},
		{"space in name", v1 + "tables:\n  - name: my table\n", []string{`line 3: bad table name "my table": character ' ' is not allowed`}},
		{"hyphen in name", v1 + "tables:\n  - name: my-table\n", []string{`line 3: bad table name "my-table": character '-' is not allowed`}},
		{"no-break space in name", v1 + "tables:\n  - name: \"a\\u00a0b\"\n", []string{`line 3: bad table name "a\u00a0b": character U+00A0`}},
		{"bad default epoch column", v1 + "epoch_column: writer-epoch\ntables: [a]\n", []string{`line 2: bad epoch_column "writer-epoch": character '-'`}},
		{"dotted epoch column", v1 + "tables:\n  - name: a\n    epoch_column: t.epoch\n", []string{`line 4: bad epoch_column "t.epoch": a column name is a single identifier`}},
		{"epoch column null", v1 + "epoch_column:\ntables: [a]\n", []string{"line 2: epoch_column must be a string, got no value"}},
		{"functions not a list", v1 + "tables: [a]\nfunctions: billing.recalc\n", []string{`line 3: functions must be a list of function names, got "billing.recalc"`}},
		{"function with signature", v1 + "tables: [a]\nfunctions:\n  - billing.recalc(int)\n", []string{`line 4: bad function name "billing.recalc(int)": character '('`}},
		{"function mapping", v1 + "tables: [a]\nfunctions:\n  - name: f\n", []string{"line 4: function name must be a string, got a mapping"}},
		{"duplicate function", v1 + "tables: [a]\nfunctions:\n  - f\n  - s.g\n  - F\n", []string{"line 6: function f is listed twice (lines 4 and 6)"}},
		{"JSON error line", "{\n  \"version\": 1,\n  \"tables\": [\n    {\"name\": \"a\", \"mdoe\": \"strict\"}\n  ]\n}\n", []string{`line 4: unknown key "mdoe" in table entry`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.in), "p.yaml")
			if err == nil {
				t.Fatalf("no error; got %+v", p)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "sqlfence: policy p.yaml") {
				t.Errorf("error %q lacks the sqlfence: policy p.yaml prefix", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadPolicyInvalidFiles(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"unknown_key.yaml", `line 7: unknown key "mdoe" in table entry (known: name, epoch_column, mode, stale)`},
		{"duplicate_table.yaml", "line 7: table billing.invoices is listed twice (lines 5 and 7)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := policyTestdata(tt.file)
			_, err := LoadPolicy(path)
			if err == nil {
				t.Fatal("no error")
			}
			if want := "sqlfence: policy " + path + " " + tt.want; err.Error() != want {
				t.Errorf("error\n %q\nwant\n %q", err, want)
			}
		})
	}
}

func TestLoadPolicyUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	_, err := LoadPolicy(path)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"sqlfence: policy ", path, "sqlfence_policy=PATH", "SQLFENCE_POLICY"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}

	_, err = LoadPolicy("")
	if err == nil || !strings.Contains(err.Error(), "SQLFENCE_POLICY") {
		t.Errorf("LoadPolicy(\"\") = %v, want an error saying how to give a policy", err)
	}
}

func TestIdentifiers(t *testing.T) {
	long := strings.Repeat("a", 70)
	// Byte 63 falls inside the 31st "é": PostgreSQL cuts before it.
	longUTF8 := "xx" + strings.Repeat("é", 40)
	tests := []struct {
		in     string // as the YAML value of name:
		want   QualifiedName
		String string
	}{
		{"inventory", QualifiedName{Name: "inventory"}, "inventory"},
		{"Inventory", QualifiedName{Name: "inventory"}, "inventory"},
		{"BILLING.Invoices", QualifiedName{"billing", "invoices"}, "billing.invoices"},
		{`"Inventory"`, QualifiedName{Name: "Inventory"}, `"Inventory"`},
		{`"My Schema"."Odd.Name"`, QualifiedName{"My Schema", "Odd.Name"}, `"My Schema"."Odd.Name"`},
		{`Billing."Invoices"`, QualifiedName{"billing", "Invoices"}, `billing."Invoices"`},
		{`"billing".invoices`, QualifiedName{"billing", "invoices"}, "billing.invoices"},
		{`"say ""hi"""`, QualifiedName{Name: `say "hi"`}, `"say ""hi"""`},
		{`"a""."".b"`, QualifiedName{Name: `a".".b`}, `"a""."".b"`},
		{"_t$1", QualifiedName{Name: "_t$1"}, "_t$1"},
		{"Straße", QualifiedName{Name: "straße"}, `"straße"`},                     // only ASCII folds
		{"ÉTÉ", QualifiedName{Name: "ÉtÉ"}, `"ÉtÉ"`},                              // non-ASCII letters stay as written
		{"日本.表", QualifiedName{"日本", "表"}, `"日本"."表"`},                            // non-ASCII start is allowed
		{`"1st"`, QualifiedName{Name: "1st"}, `"1st"`},                            // digits first need quoting
		{`"select"`, QualifiedName{Name: "select"}, `"select"`},                   // keywords are quoted
		{long, QualifiedName{Name: long[:63]}, long[:63]},                         // PostgreSQL truncates to 63 bytes
		{longUTF8, QualifiedName{Name: longUTF8[:62]}, `"` + longUTF8[:62] + `"`}, // not mid-character
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePolicy([]byte("version: 1\ntables:\n  - name: '"+strings.ReplaceAll(tt.in, "'", "''")+"'\n"), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Tables[0].QualifiedName; got != tt.want {
				t.Errorf("parsed %q, want %q", got, tt.want)
			}
			if got := tt.want.String(); got != tt.String {
				t.Errorf("String() = %s, want %s", got, tt.String)
			}
		})
	}
}

func TestQualifiedNameString(t *testing.T) {
	tests := []struct {
		q    QualifiedName
		want string
	}{
		{QualifiedName{Name: "t"}, "t"},
		{QualifiedName{"s", "t"}, "s.t"},
		{QualifiedName{"S", "t"}, `"S".t`},
		{QualifiedName{"s", "a b"}, `s."a b"`},
		{QualifiedName{"s", "a.b"}, `s."a.b"`},
		{QualifiedName{Name: `q"q`}, `"q""q"`},
		{QualifiedName{Name: "9lives"}, `"9lives"`},
		{QualifiedName{Name: "$x"}, `"$x"`},
		{QualifiedName{Name: "x$9"}, "x$9"},
		{QualifiedName{Name: ""}, `""`},
	}
	for _, tt := range tests {
		if got := tt.q.String(); got != tt.want {
			t.Errorf("%#v.String() = %s, want %s", tt.q, got, tt.want)
		}
	}
}

const matchTestPolicy = `version: 1
tables:
  - name: inventory            # line 3: any schema
  - name: billing.inventory    # line 4: same settings as line 3
  - name: orders               # line 5
  - name: archive.orders       # line 6: disagrees on mode
    mode: repeatable
  - name: sales.items          # line 8
  - name: stock.items          # line 9: disagrees on column
    epoch_column: e2
  - name: hr.staff             # line 11: same settings as line 12
  - name: ops.staff            # line 12
  - name: '"Odd"."Mixed Case"' # line 13
functions:
  - billing.recalc
  - audit
`

func TestMatch(t *testing.T) {
	tests := []struct {
		schema, name string
		line         int // 0: no match
		ambiguous    bool
	}{
		// Unqualified entry: matches in any schema.
		{"", "inventory", 3, false}, // billing.inventory agrees, so not ambiguous; the unqualified entry wins
		{"public", "inventory", 3, false},
		{"billing", "inventory", 4, false}, // the more specific entry
		// Disagreeing unqualified and qualified entries.
		{"", "orders", 5, true},
		{"archive", "orders", 6, false},
		{"public", "orders", 5, false},
		// Only qualified entries.
		{"", "items", 8, true},
		{"sales", "items", 8, false},
		{"stock", "items", 9, false},
		{"public", "items", 0, false},
		{"", "staff", 11, false},
		{"ops", "staff", 12, false},
		{"public", "staff", 0, false},
		// Exact, case-sensitive identifiers.
		{"Odd", "Mixed Case", 13, false},
		{"", "Mixed Case", 13, false},
		{"odd", "mixed case", 0, false},
		{"", "Inventory", 0, false},
		// Not protected.
		{"", "customers", 0, false},
		{"billing", "customers", 0, false},
		{"", "", 0, false},
	}
	parsed, err := ParsePolicy([]byte(matchTestPolicy), "")
	if err != nil {
		t.Fatal(err)
	}
	// The same policy without the index exercises the fallback scan, which
	// must answer identically.
	handBuilt := &Policy{Tables: append([]Table(nil), parsed.Tables...)}
	for _, p := range []struct {
		name string
		p    *Policy
	}{{"indexed", parsed}, {"hand-built", handBuilt}} {
		for _, tt := range tests {
			got, amb := p.p.Match(tt.schema, tt.name)
			line := 0
			if got != nil {
				line = got.Line
			}
			if line != tt.line || amb != tt.ambiguous {
				t.Errorf("%s: Match(%q, %q) = line %d, ambiguous %v; want line %d, ambiguous %v",
					p.name, tt.schema, tt.name, line, amb, tt.line, tt.ambiguous)
			}
		}
	}

	if tab, _ := parsed.Match("archive", "orders"); tab.Mode != ModeRepeatable || tab.EpochColumn != "writer_epoch" || tab.String() != "archive.orders" {
		t.Errorf("archive.orders = %+v", tab)
	}
	if tab, _ := (*Policy)(nil).Match("", "t"); tab != nil {
		t.Errorf("nil policy matched %+v", tab)
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	p, err := ParsePolicy([]byte(matchTestPolicy), "")
	if err != nil {
		t.Fatal(err)
	}
	schema, name := "billing", "inventory"
	allocs := testing.AllocsPerRun(1000, func() {
		p.Match(schema, name)
		p.Match("", name)
		p.Match("public", "customers")
		p.MatchFunction("billing", "recalc")
		p.MatchFunction("", "other")
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per run", allocs)
	}
}

func TestMatchFunction(t *testing.T) {
	tests := []struct {
		schema, name string
		want         bool
	}{
		{"billing", "recalc", true},
		{"", "recalc", true}, // search_path may find billing.recalc
		{"public", "recalc", false},
		{"", "audit", true},
		{"anywhere", "audit", true},
		{"billing", "Recalc", false},
		{"", "other", false},
	}
	parsed, err := ParsePolicy([]byte(matchTestPolicy), "")
	if err != nil {
		t.Fatal(err)
	}
	handBuilt := &Policy{Functions: parsed.Functions}
	for _, p := range []*Policy{parsed, handBuilt} {
		for _, tt := range tests {
			if got := p.MatchFunction(tt.schema, tt.name); got != tt.want {
				t.Errorf("MatchFunction(%q, %q) = %v, want %v (parsed: %v)", tt.schema, tt.name, got, tt.want, p == parsed)
			}
		}
	}
	if (*Policy)(nil).MatchFunction("", "audit") {
		t.Error("nil policy matched a function")
	}
}

func TestModeAndEnforcement(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{ModeStrict.String(), "strict"},
		{ModeRepeatable.String(), "repeatable"},
		{Mode(0).String(), "Mode(0)"},
		{ModeStrict.Operator(), "<"},
		{ModeRepeatable.Operator(), "<="},
		{Mode(0).Operator(), "<"}, // an unset mode must not widen what a stale writer may do
		{engine.CatalogOperator(ModeStrict.Operator()), "OPERATOR(pg_catalog.<)"},
		{engine.CatalogOperator(ModeRepeatable.Operator()), "OPERATOR(pg_catalog.<=)"},
		{engine.CatalogOperator(Mode(0).Operator()), "OPERATOR(pg_catalog.<)"},
		{EnforceOn.String(), "on"},
		{EnforceShadow.String(), "shadow"},
		{Enforcement(9).String(), "Enforcement(9)"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}
