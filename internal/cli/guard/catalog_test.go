package guard

import (
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// TestGuardCatalogWarnings: after installing, the guard warns about what writes
// protected tables from inside the database: a foreign key that cascades into one, a
// trigger or rule on another table whose code writes one.
func TestGuardCatalogWarnings(t *testing.T) {
	t.Parallel()
	dsn, policy, raw := guardFixture(t)
	if _, err := raw.Exec(t.Context(), `
		CREATE TABLE warehouse (id int PRIMARY KEY);
		ALTER TABLE inventory ADD COLUMN warehouse int REFERENCES warehouse ON DELETE CASCADE;
		CREATE FUNCTION restock() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 100; RETURN NEW; END $$;
		CREATE TRIGGER notes_restock AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION restock();
		CREATE RULE notes_purge AS ON DELETE TO notes DO ALSO DELETE FROM inventory;`); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "guard --apply", out, "sqlfence guard installed",
		"warning: 3 objects in the database write protected tables where no epoch reaches",
		"warning [SF501]: foreign key inventory_warehouse_fkey on public.warehouse: DELETE of public.warehouse is refused: it cascades into the protected table public.inventory",
		"warning [SF502]: trigger notes_restock on public.notes: INSERT of public.notes is refused",
		"warning [SF503]: rule notes_purge on public.notes: DELETE of public.notes is refused")
	// The guard's own triggers on the protected tables are not reported.
	if strings.Contains(out, "sqlfence_guard") {
		t.Errorf("the guard reports its own triggers:\n%s", out)
	}
}
