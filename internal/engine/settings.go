// Settings: which SET, RESET and set_config a fenced connection runs. Only settings
// that cannot change how the server reads statement text, how names and operators
// resolve for the fence, or whether triggers fire.

package engine

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// StandardStrings changes how the server reads the text sqlfence parsed: with it off,
// a backslash escapes a quote inside '…', and a string literal to pg_query can be a
// statement boundary to the server. The registered driver sets it on in the startup
// message, with client_encoding; changing either on a connection is refused.
const StandardStrings = "standard_conforming_strings"

// safeSettings are the settings a fenced connection may change: what pools, ORMs and
// schema-per-tenant services set per session or transaction. search_path is among
// them: the fence's own text is schema-qualified, and policy names match in every
// schema, so where a name resolves cannot move a write out from under the fence.
var safeSettings = map[string]bool{
	"application_name": true, "search_path": true, "timezone": true, "datestyle": true, "intervalstyle": true,
	"statement_timeout": true, "lock_timeout": true, "idle_in_transaction_session_timeout": true,
	"idle_session_timeout": true, "transaction_timeout": true, "extra_float_digits": true, "bytea_output": true,
	"client_min_messages": true, "default_transaction_isolation": true, "default_transaction_read_only": true,
	"default_transaction_deferrable": true, "transaction_isolation": true, "transaction_read_only": true,
	"transaction_deferrable": true, "synchronous_commit": true, "work_mem": true, "maintenance_work_mem": true,
	"hash_mem_multiplier": true, "temp_buffers": true, "jit": true, "random_page_cost": true,
	"seq_page_cost": true, "effective_cache_size": true, "effective_io_concurrency": true,
	"plan_cache_mode": true, "from_collapse_limit": true, "join_collapse_limit": true,
	"cursor_tuple_fraction": true, "max_parallel_workers_per_gather": true, "lc_messages": true,
	"lc_monetary": true, "lc_numeric": true, "lc_time": true, "default_text_search_config": true,
	"xmloption": true, "xmlbinary": true, "geqo": true, "row_security": true, "default_statistics_target": true,
	"gin_fuzzy_search_limit": true, "log_min_duration_statement": true, "track_io_timing": true,
	// The rest of the planner's knobs: they choose among plans of the same statement,
	// never what it means.
	"jit_above_cost": true, "jit_inline_above_cost": true, "jit_optimize_above_cost": true,
	"min_parallel_table_scan_size": true, "min_parallel_index_scan_size": true, "constraint_exclusion": true,
	"recursive_worktable_factor": true, "max_parallel_workers": true, "max_parallel_maintenance_workers": true,
	"debug_parallel_query": true, "force_parallel_mode": true, "gin_pending_list_limit": true,
	// SET TRANSACTION … and SET SESSION CHARACTERISTICS AS TRANSACTION …
	"transaction": true, "session characteristics": true,
}

// dangerousSettings say why a setting is refused where the reason is known.
var dangerousSettings = map[string]string{
	StandardStrings:            "with it off the server reads a backslash inside '…' as an escape, and reads statements differently from sqlfence",
	"client_encoding":          "in a multi-byte encoding such as SJIS or GBK a character's trailing byte can be a backslash or a quote, and the server reads statements differently from sqlfence",
	"backslash_quote":          "it changes how the server reads quotes inside string literals",
	"escape_string_warning":    "it belongs to the settings that change how string literals are read",
	"session_replication_role": "replica mode switches off triggers and foreign-key actions, the database-side guard among them",
	"role":                     "it changes the privileges the session runs with (a role's setting defaults apply only at login)",
	"session_authorization":    "it changes the privileges the session runs with (a role's setting defaults apply only at login)",
	"check_function_bodies":    "it lets functions be created without their bodies being checked",
	"allow_system_table_mods":  "it lets system catalogs be changed",
}

// settingAllowed reports whether a fenced connection may change the setting name (as
// PostgreSQL folds it). Custom settings (prefix.name, as row-level-security policies
// read with current_setting) are allowed, except sqlfence's own and PL/pgSQL's, which
// change how function bodies are read.
func settingAllowed(name string) bool {
	name = strings.ToLower(name)
	if safeSettings[name] || strings.HasPrefix(name, "enable_") || strings.HasPrefix(name, "cpu_") ||
		strings.HasPrefix(name, "geqo_") || strings.HasPrefix(name, "parallel_") {
		return true
	}
	prefix, _, custom := strings.Cut(name, ".")
	return custom && prefix != "sqlfence" && prefix != "plpgsql"
}

// refuseSetting is the refusal for changing the setting name.
func refuseSetting(name, how string) *Error {
	why, known := dangerousSettings[strings.ToLower(name)]
	if !known {
		why = "it is not on sqlfence's list of settings that cannot change how statements are read, how names resolve, or whether triggers fire"
	}
	fix := "set it outside the driver (a role or database default, or a separate connection)"
	switch strings.ToLower(name) {
	case StandardStrings:
		fix = "leave it on (the default since PostgreSQL 9.1); write backslash escapes as E'…' strings"
	case "client_encoding":
		fix = "keep UTF8, which the registered driver sets at connect; convert text in the application"
	}
	return refuse(rulecode.Setting, nil, how+" of "+name+" is not run on a fenced connection: "+why, fix)
}

// admitSetting judges SET, SET LOCAL and RESET.
func admitSetting(s *pg.VariableSetStmt) *Error {
	switch s.Kind {
	case pg.VariableSetKind_VAR_RESET_ALL:
		return nil // back to the session's defaults, judged on the session (defaults.go)
	case pg.VariableSetKind_VAR_RESET:
		if settingAllowed(s.Name) || s.Name == StandardStrings || s.Name == "client_encoding" {
			return nil // back to the session's default, judged on the session (defaults.go)
		}
		if s.Name == "role" || s.Name == "session_authorization" {
			// Back to the role the session connected as, what pools send before they
			// hand a connection back; SET ROLE stays refused.
			return nil
		}
		return refuseSetting(s.Name, "RESET")
	}
	if settingAllowed(s.Name) || setsPinnedValue(s) {
		return refuseEarlyCommit(s, "SET")
	}
	return refuseSetting(s.Name, "SET")
}

// SynchronousCommit is the setting that decides when a commit is acknowledged.
const SynchronousCommit = "synchronous_commit"

// durableCommit are the values of synchronous_commit (as the server compares them,
// case-insensitively) at which a commit returns only once its WAL is flushed on the
// server, and on a synchronous standby where there is one: on, remote_apply,
// remote_write, and on's other spellings. The rest — off, local, their spellings
// (false, no, 0), and anything the server would reject — are refused.
var durableCommit = map[string]bool{"on": true, "true": true, "yes": true, "1": true, "remote_apply": true, "remote_write": true}

// refuseEarlyCommit refuses s when it sets synchronous_commit to a value that
// acknowledges a commit early (off, local), or to one sqlfence cannot read: a claim
// or a fenced write acknowledged then can be lost in a crash or failover, and the lost
// claim's epoch issued again. nil for every other setting, for DEFAULT (the server's
// default, which the connectors check at connect), and for a durable value.
func refuseEarlyCommit(s *pg.VariableSetStmt, how string) *Error {
	if !strings.EqualFold(s.Name, SynchronousCommit) {
		return nil
	}
	value := ""
	switch s.Kind {
	case pg.VariableSetKind_VAR_SET_DEFAULT, pg.VariableSetKind_VAR_RESET:
		return nil
	case pg.VariableSetKind_VAR_SET_VALUE:
		if len(s.Args) == 1 {
			if c := s.Args[0].GetAConst(); c != nil {
				switch v := c.Val.(type) {
				case *pg.A_Const_Sval:
					value = v.Sval.GetSval()
				case *pg.A_Const_Ival:
					value = strconv.FormatInt(int64(v.Ival.GetIval()), 10)
				case *pg.A_Const_Boolval:
					value = strconv.FormatBool(v.Boolval.GetBoolval())
				}
			}
		}
	}
	if durableCommit[strings.ToLower(value)] {
		return nil
	}
	return refuseEarlyCommitValue(value, how)
}

// refuseEarlyCommitValue is the refusal for setting synchronous_commit to value (""
// when sqlfence cannot read it).
func refuseEarlyCommitValue(value, how string) *Error {
	const fix = "keep synchronous_commit at on, remote_apply or remote_write (RESET synchronous_commit and SET … TO DEFAULT return to the server's default, which must be one of them); " +
		"a batch that may lose its last commits belongs on a connection without sqlfence, writing no protected or claim table"
	what := how + " of synchronous_commit"
	var why string
	switch strings.ToLower(value) {
	case "":
		return refuse(rulecode.SynchronousCommit, nil, what+" to a value sqlfence cannot read is not run on a fenced connection: at off or local a commit is acknowledged before it is safe",
			"write the value as a string literal ('on', 'remote_apply' or 'remote_write')")
	case "local":
		why = "at local a commit is acknowledged once it is flushed on the primary, before the synchronous standbys have it, so a failover can lose it"
	case "off", "false", "no", "0":
		why = "at " + value + " a commit is acknowledged before its WAL is flushed, so a crash or a failover can lose it"
	default:
		why = "it is not one of the values at which a commit is acknowledged only once it is safe"
	}
	return refuse(rulecode.SynchronousCommit, nil, what+" to "+value+" is not run on a fenced connection: "+why+
		", and a claim lost that way lets its epoch be issued again to another holder while the first one's writes stand", fix)
}

// setsPinnedValue reports whether s sets standard_conforming_strings or
// client_encoding to the value the driver pins at connect, a no-op some client
// libraries send when they start.
func setsPinnedValue(s *pg.VariableSetStmt) bool {
	switch s.Kind {
	case pg.VariableSetKind_VAR_SET_DEFAULT:
		return s.Name == StandardStrings || s.Name == "client_encoding"
	case pg.VariableSetKind_VAR_SET_VALUE:
	default:
		return false
	}
	if len(s.Args) != 1 {
		return false
	}
	c := s.Args[0].GetAConst()
	v := strings.ToLower(c.GetSval().GetSval())
	switch s.Name {
	case StandardStrings:
		return v == "on" || v == "true" || v == "yes" || c.GetIval().GetIval() == 1 || c.GetBoolval().GetBoolval()
	case "client_encoding":
		return v == "utf8" || v == "utf-8" || v == "unicode"
	}
	return false
}

// admitSetConfig judges a call of set_config: its first argument must be a literal
// naming an allowed setting, or sqlfence cannot say what it changes.
func admitSetConfig(args []*pg.Node) *Error {
	if len(args) == 0 {
		return refuse(rulecode.Setting, nil, "set_config without arguments", "pass the setting name as a literal")
	}
	c := args[0].GetAConst()
	if c == nil || c.GetSval() == nil {
		if tc := args[0].GetTypeCast(); tc != nil && tc.Arg.GetAConst().GetSval() != nil {
			c = tc.Arg.GetAConst()
		} else {
			return refuse(rulecode.Setting, nil, "set_config with a setting name that is not a literal: sqlfence cannot tell which setting it changes",
				"name the setting as a string literal, e.g. set_config('application_name', $1, false)")
		}
	}
	name := c.GetSval().GetSval()
	if settingAllowed(name) {
		if strings.EqualFold(name, SynchronousCommit) {
			return admitSetConfigCommit(args[1:])
		}
		return nil
	}
	if len(args) > 1 {
		if v := args[1].GetAConst(); v != nil && setsPinnedValue(&pg.VariableSetStmt{
			Kind: pg.VariableSetKind_VAR_SET_VALUE, Name: strings.ToLower(name), Args: []*pg.Node{args[1]}}) {
			return nil // the value the driver pins at connect: a no-op
		}
	}
	return refuseSetting(name, "set_config")
}

// admitSetConfigCommit judges the value of set_config('synchronous_commit', value, …):
// a string literal of a durable value. NULL is set_config's reset to the session's
// default, which a call judged once for every session (in a routine body too)
// cannot know: RESET synchronous_commit says the same and is judged on the session
// it runs on (defaults.go).
func admitSetConfigCommit(rest []*pg.Node) *Error {
	if len(rest) > 0 {
		if c := rest[0].GetAConst(); c != nil {
			if c.Isnull {
				return refuse(rulecode.SynchronousCommit, nil, "set_config of synchronous_commit to NULL returns it to the session's default, which may be off or local (a role or database default) and is each session's own",
					"write RESET synchronous_commit, which sqlfence judges against the default of the session it runs on, or set a durable value ('on', 'remote_apply' or 'remote_write')")
			}
			if v, ok := c.Val.(*pg.A_Const_Sval); ok {
				if durableCommit[strings.ToLower(v.Sval.GetSval())] {
					return nil
				}
				return refuseEarlyCommitValue(v.Sval.GetSval(), "set_config")
			}
		}
	}
	return refuseEarlyCommitValue("", "set_config")
}

// guardRoutines are the routines sqlfence guard installs in its schema, sqlfence:
// override sets sqlfence.override, which lets the guard pass the transaction's writes.
var guardRoutines = map[string]bool{"override": true, "active_override": true, "guard": true,
	"guard_reject": true, "guard_epoch": true, "guard_statements": true, "guard_always": true}

// refuseGuardRoutine refuses a call that may reach one of the guard's routines unless
// the policy names that routine, schema-qualified, under safe_functions (an operator's
// explicit choice, as for a repair tool) and the call is qualified the same way: an
// unqualified entry, or an unqualified call, reaches schema sqlfence whenever
// search_path puts it first, so an application's own function named override would
// switch the guard off.
func (p *Policy) refuseGuardRoutine(schema, name, shown, how string) *Error {
	if (schema != "" && schema != "sqlfence") || !guardRoutines[name] {
		return nil
	}
	if schema == "sqlfence" {
		for _, f := range p.SafeFunctions {
			if f.Schema == "sqlfence" && f.Name == name {
				return nil
			}
		}
	}
	return refuse(rulecode.Setting, nil, how+" of "+shown+", which may be the database guard's own routine: the guard's override is an operator's repair, which the policy does not name",
		"run sqlfence.override outside the driver, or list it as sqlfence."+name+" under safe_functions: and call it qualified; if "+shown+" is the application's own function, call it qualified with its schema")
}
