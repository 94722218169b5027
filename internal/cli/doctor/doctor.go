// Package doctor is `sqlfence doctor`: it inspects a deployment — the database the
// application connects to, as the application's role, and the policy it runs with —
// and says, check by check, what holds and the exact fix for what does not. Each
// check reads the catalog through the queries the driver, the guard and the claim
// helpers use (internal/pgcatalog), so doctor never judges a database differently
// from the code that runs on it.
package doctor

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/dsnparam"
)

const usage = `Usage: sqlfence doctor --dsn DSN --policy sqlfence.yaml [--lease 30s] [--json] [--allow-warnings]

Inspects a deployment and says, check by check, what holds and the exact fix for what
does not. Connect as the application's role, with the application's DSN (its
sqlfence_policy, if it names one, is the policy unless --policy is given): the checks
judge what that role can do and what its sessions see.

  server       the server's version is one sqlfence supports (PostgreSQL 15 to 18)
  replication  a primary, not a standby; whether commits wait for a synchronous
               standby, and what a failover can then lose
  pooler       a connection pooler (PgBouncer) in front of the server, and the settings
               sqlfence needs behind one
  role         the role is not a superuser, does not own the protected tables (an owner
               can disable their triggers) and cannot change the guard's sqlfence schema
  policy       every protected and claim table of the policy exists, with a bigint NOT
               NULL epoch column; what in the catalog writes them where no epoch reaches
  guard        the guard is installed for this policy: every protected table, partition
               and child carries its triggers, for the policy's epoch column, firing in
               every replication role
  catalog      the catalog version and its event triggers (resolve: catalog)
  timeouts     statement_timeout and lock_timeout against the lease

Exit status: 0 every check passed, 1 a check failed, 2 usage, policy or connection
error, 3 warnings but no failure (0 with --allow-warnings).

Flags:
`

// ExitWarnings is doctor's exit code when some check warned and none failed.
const ExitWarnings = 3

// Run is sqlfence doctor.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("doctor", usage)
	dsn := f.String("dsn", "", "the application's DSN (its role, its database)")
	policyPath := f.String("policy", "", "policy file (default: the DSN's sqlfence_policy, else $SQLFENCE_POLICY)")
	lease := f.Duration("lease", 30*time.Second, "the claim helpers' lease (claim.JobsConfig.Lease), for the timeouts check")
	asJSON := f.Bool("json", false, "print the checks as JSON")
	allowWarnings := f.Bool("allow-warnings", false, "exit 0 when checks warned but none failed")
	connectTimeout := f.Duration("connect-timeout", cmdutil.DefaultConnectTimeout, "how long to wait for the database to answer")
	pos, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	}
	if *dsn == "" {
		return f.UsageError(stderr, "--dsn is required: the application's DSN, postgres://app@host:5432/dbname")
	}
	if *lease <= 0 {
		return f.UsageError(stderr, "--lease must be positive")
	}
	if *policyPath == "" {
		// The application's DSN may name its policy, as the driver reads it.
		if path, _, err := dsnparam.Split(*dsn); err == nil {
			*policyPath = path
		}
	}
	pol, err := cmdutil.LoadPolicy(*policyPath)
	if err != nil {
		return cmdutil.Fail(stderr, "doctor", err)
	}
	ctx := context.Background()
	conn, err := cmdutil.Connect(ctx, *dsn, *connectTimeout)
	if err != nil {
		return cmdutil.Fail(stderr, "doctor", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	d := &doctor{conn: conn, policy: pol, policyPath: pol.Source, lease: *lease}
	rep := d.run(ctx)
	if *asJSON {
		cmdutil.WriteJSON(stdout, rep)
	} else {
		rep.writeText(stdout)
	}
	switch {
	case rep.Summary.Fail > 0:
		return cmdutil.ExitFindings
	case rep.Summary.Warn > 0 && !*allowWarnings:
		return ExitWarnings
	}
	return cmdutil.ExitOK
}

// Status is one check's verdict.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	// Skip: the check could not be made (the role may not read what it needs, or an
	// earlier check's failure makes it meaningless); it says why.
	Skip Status = "skip"
)

// Check is one finding of one check: a check reports one Check per thing it judged
// (a table, a trigger), so that each fix names exactly what it fixes.
type Check struct {
	Check  string `json:"check"` // server, replication, pooler, role, policy, guard, catalog, timeouts
	Status Status `json:"status"`
	Code   string `json:"code,omitempty"` // the rule code the driver would refuse with, when there is one
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is what doctor prints.
type Report struct {
	Target  string  `json:"target"`
	Policy  string  `json:"policy"`
	Checks  []Check `json:"checks"`
	Summary struct {
		Pass int `json:"pass"`
		Warn int `json:"warn"`
		Fail int `json:"fail"`
		Skip int `json:"skip"`
	} `json:"summary"`
}

func (r *Report) add(c Check) {
	r.Checks = append(r.Checks, c)
	switch c.Status {
	case Pass:
		r.Summary.Pass++
	case Warn:
		r.Summary.Warn++
	case Fail:
		r.Summary.Fail++
	case Skip:
		r.Summary.Skip++
	}
}

func (r *Report) writeText(w io.Writer) {
	fmt.Fprintf(w, "sqlfence doctor: %s, policy %s\n", r.Target, r.Policy)
	for _, c := range r.Checks {
		label := string(c.Status)
		if c.Status == Fail {
			label = "FAIL"
		}
		code := ""
		if c.Code != "" {
			code = " [" + c.Code + "]"
		}
		fmt.Fprintf(w, "  %-4s  %-11s %s%s\n", label, c.Check, c.Detail, code)
		if c.Fix != "" {
			fmt.Fprintf(w, "        %-11s fix: %s\n", "", c.Fix)
		}
	}
	fmt.Fprintf(w, "%d passed, %d %s, %d failed", r.Summary.Pass, r.Summary.Warn, cmdutil.Plural(r.Summary.Warn, "warning", "warnings"), r.Summary.Fail)
	if r.Summary.Skip > 0 {
		fmt.Fprintf(w, ", %d not checked", r.Summary.Skip)
	}
	fmt.Fprintln(w)
}
