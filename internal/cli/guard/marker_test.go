package guard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// TestGuardMarkerForms: the statement trigger's two tests of the marker — one prefix
// for a statement that fenced this table alone, with or without the catalog version,
// and the marker's words taken apart for one that fenced several — let through
// exactly what the driver's markers for this table say, and nothing else: a stale
// version is SF005 on either path, a marker for another table (or a longer name) is
// SF001. And the row trigger's one-comparison WHEN clause still tells a NULL epoch
// apart: raising one from NULL passes, lowering one to NULL is SF002.
func TestGuardMarkerForms(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	raw := clitest.PGConnect(t, dsn, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := raw.Exec(ctx, `
		CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint);
		INSERT INTO inventory VALUES ('widget', 1, 5), ('nothing', 1, NULL);`); err != nil {
		t.Fatal(err)
	}
	policy := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables: [inventory]\n")
	out, errOut, code := cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	var version int64
	if err := raw.QueryRow(ctx, "SELECT pg_sequence_last_value('sqlfence.catalog_version')").Scan(&version); err != nil {
		t.Fatal(err)
	}
	fenced := clitest.PGConnect(t, dsn, map[string]string{sqlfence.GuardSetting: "on"})
	const update = "UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'widget'"
	for _, c := range []struct{ marker, want string }{
		{"inventory", ""},
		{fmt.Sprintf("@%d inventory", version), ""},
		{"notes inventory", ""},
		{"inventory notes", ""},
		{fmt.Sprintf("@%d notes inventory", version), ""},
		{fmt.Sprintf("@%d inventory", version-1), "SF005"},
		{fmt.Sprintf("@%d notes inventory", version-1), "SF005"},
		{fmt.Sprintf("@%d inventory", version+1), "SF005"},
		{"notes", "SF001"},
		{"inventoryx", "SF001"},
		{"inventor", "SF001"},
		{fmt.Sprintf("@%d inventoryx", version), "SF001"},
		{"x inventoryx", "SF001"},
	} {
		q := "/*sqlfence fenced: " + c.marker + "*/ " + update
		if _, err := fenced.Exec(ctx, q); pgCode(err) != c.want {
			t.Errorf("%s: %v, want %q", q, err, c.want)
		}
	}
	// Through a function (a frame in the context stack) the one-prefix path rejects too.
	if _, err := raw.Exec(ctx, `CREATE FUNCTION bump() RETURNS void LANGUAGE sql AS $$ `+update+` $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := fenced.Exec(ctx, "/*sqlfence fenced: inventory*/ SELECT bump()"); pgCode(err) != "SF001" ||
		!strings.Contains(err.Error(), "inside a function") {
		t.Errorf("write inside a function: %v, want SF001", err)
	}

	if _, err := fenced.Exec(ctx, "/*sqlfence fenced: inventory*/ UPDATE inventory SET writer_epoch = 6 WHERE sku = 'nothing'"); err != nil {
		t.Errorf("epoch raised from NULL: %v", err)
	}
	if _, err := fenced.Exec(ctx, "/*sqlfence fenced: inventory*/ UPDATE inventory SET writer_epoch = NULL WHERE sku = 'widget'"); pgCode(err) != "SF002" ||
		!strings.Contains(err.Error(), "backwards, from 5 to NULL") {
		t.Errorf("epoch lowered to NULL: %v, want SF002", err)
	}
	if _, err := fenced.Exec(ctx, "/*sqlfence fenced: inventory*/ UPDATE inventory SET writer_epoch = 4 WHERE sku = 'widget'"); pgCode(err) != "SF002" {
		t.Errorf("epoch lowered: %v, want SF002", err)
	}
}
