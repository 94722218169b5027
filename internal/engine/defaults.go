// Pinned settings and what a reset returns them to. Every decision assumes a few
// session settings keep one value while the server runs the statement: the server
// reads the text as sqlfence parsed it only with standard_conforming_strings on and
// client_encoding UTF8; a claim or a fenced write is not lost in a crash only with a
// durable synchronous_commit; the guard's triggers fire only with
// session_replication_role origin. The connectors check the values a session has
// (its ParameterStatus before each statement, a query at connect), and the allowlist
// refuses SET to any other value.
//
// A reset is a SET too, to a value the text does not show: RESET ALL, RESET x,
// SET x TO DEFAULT and DISCARD ALL return x to the session's default — what the
// session started with (the server's configuration, then database and role defaults,
// then the startup parameters), not what a SET after connect gave it. A pool whose
// AfterConnect sets standard_conforming_strings on over a role default of off has
// a session that is on, and a RESET ALL that turns it off: in a batch, a pipeline or
// a multi-statement text the next statement then runs with it off before any check
// between statements could see it. So the decision records which pinned settings a
// text resets (Decision.Resets), the connectors read each session's defaults at
// connect (pg_settings.reset_val), and InSession judges the reset as the SET it
// amounts to, on the session it runs on.

package engine

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Pinned is a set of the settings decisions assume keep one value.
type Pinned uint8

const (
	PinStandardStrings   Pinned = 1 << iota // standard_conforming_strings on
	PinClientEncoding                       // client_encoding UTF8
	PinSynchronousCommit                    // synchronous_commit on, remote_apply or remote_write
	PinReplicationRole                      // session_replication_role origin
	PinAll               = PinStandardStrings | PinClientEncoding | PinSynchronousCommit | PinReplicationRole
)

// pins says, per pinned setting, its name (as pg_settings spells it) and which of
// its values decisions hold under.
var pins = []struct {
	bit  Pinned
	name string
	ok   func(string) bool
}{
	{PinStandardStrings, StandardStrings, func(v string) bool { return strings.EqualFold(v, "on") }},
	{PinClientEncoding, "client_encoding", func(v string) bool { return strings.EqualFold(v, "UTF8") }},
	{PinSynchronousCommit, SynchronousCommit, func(v string) bool { return durableCommit[strings.ToLower(v)] }},
	{PinReplicationRole, "session_replication_role", func(v string) bool { return strings.EqualFold(v, "origin") }},
}

// PinnedSettings are the names of the pinned settings.
func PinnedSettings() []string {
	names := make([]string, len(pins))
	for i, p := range pins {
		names[i] = p.name
	}
	return names
}

// pinOf is the bit of the setting name (as PostgreSQL folds it), 0 for any other.
func pinOf(name string) Pinned {
	for _, p := range pins {
		if strings.EqualFold(p.name, name) {
			return p.bit
		}
	}
	return 0
}

// Defaults are one session's defaults of the pinned settings, read at connect.
type Defaults struct {
	values map[string]string
	bad    Pinned // the settings whose default is not the value decisions hold under
}

// NewDefaults are the defaults of a session whose reset values (pg_settings.reset_val
// by name) are resetVal. A pinned setting missing from it counts as one whose
// default is unknown, and a reset of it is refused.
func NewDefaults(resetVal map[string]string) *Defaults {
	d := &Defaults{values: resetVal}
	for _, p := range pins {
		if v, ok := resetVal[p.name]; !ok || !p.ok(v) {
			d.bad |= p.bit
		}
	}
	return d
}

// resetsOf is what the top-level statements of a text reset: the pinned settings
// returned to the session's default, and how the first such statement does it (for
// messages).
func resetsOf(tree *pg.ParseResult) (Pinned, string) {
	var all Pinned
	how := ""
	for _, raw := range tree.Stmts {
		bits, what := resetsIn(raw.Stmt)
		if bits != 0 && how == "" {
			how = what
		}
		all |= bits
	}
	return all, how
}

// resetsIn is what one statement resets.
func resetsIn(n *pg.Node) (Pinned, string) {
	switch s := n.GetNode().(type) {
	case *pg.Node_VariableSetStmt:
		v := s.VariableSetStmt
		switch v.Kind {
		case pg.VariableSetKind_VAR_RESET_ALL:
			return PinAll, "RESET ALL"
		case pg.VariableSetKind_VAR_RESET:
			return pinOf(v.Name), "RESET " + v.Name
		case pg.VariableSetKind_VAR_SET_DEFAULT:
			return pinOf(v.Name), "SET " + v.Name + " TO DEFAULT"
		}
	case *pg.Node_DiscardStmt:
		if s.DiscardStmt.Target == pg.DiscardMode_DISCARD_ALL {
			return PinAll, "DISCARD ALL"
		}
	}
	return 0, ""
}

// refuseBodyReset refuses a routine body (or DO block) that resets a pinned setting:
// its effect outlives the call, and a body is judged once for every session, while
// what a reset returns to is each session's own.
func refuseBodyReset(what string, tree *pg.ParseResult) *Error {
	bits, how := resetsOf(tree)
	if bits == 0 {
		return nil
	}
	return refuse(rulecode.Setting, nil, what+" runs "+how+", which returns "+pinNames(bits)+" to the session's default: the default is each session's own (a role or database default), and a body is judged once for every session",
		"reset settings with plain statements through the driver, which judges each on the session it runs on")
}

// pinNames names the settings of bits, for messages.
func pinNames(bits Pinned) string {
	var names []string
	for _, p := range pins {
		if bits&p.bit != 0 {
			names = append(names, p.name)
		}
	}
	if len(names) == len(pins) {
		return "every setting, " + strings.Join(names, ", ") + " among them,"
	}
	return strings.Join(names, ", ")
}

// Resets reports the pinned settings the text returns to the session's default.
func (d *Decision) Resets() Pinned { return d.resets }

// InSession is d on a session whose pinned settings' defaults are def (nil: not
// known, on a driver sqlfence reads nothing through): d itself, or the refusal of a
// reset that returns a pinned setting to a default other than the value decisions
// hold under — judged as the SET to that default it amounts to, before anything of
// the text is sent.
func (d *Decision) InSession(def *Defaults) *Decision {
	if def == nil || d.resets&def.bad == 0 {
		return d
	}
	for _, p := range pins {
		if d.resets&def.bad&p.bit == 0 {
			continue
		}
		value, known := def.values[p.name]
		if !known {
			value = "unknown (sqlfence could not read it at connect)"
		}
		return &Decision{act: ActRefuse, refusal: refuseReset(d.resetHow, p.name, value)}
	}
	return d
}

// refuseReset is the refusal of how (RESET ALL, …) on a session whose default of the
// pinned setting name is value.
func refuseReset(how, name, value string) *Error {
	where := "; the default comes from the server's configuration, a database or role default (ALTER DATABASE … SET, ALTER ROLE … SET) or the startup parameters, and a SET after connect — such as a pool's AfterConnect — changes the value but not the default a reset returns to"
	fix := "set " + name + " in the connection's startup parameters (pgx: ConnConfig.RuntimeParams, or the DSN's options=-c " + name + "=…), which is what a reset returns to, or remove the role or database default (ALTER ROLE … RESET " + name + ", ALTER DATABASE … RESET " + name + "); or do not reset it"
	if name == SynchronousCommit {
		return refuse(rulecode.SynchronousCommit, nil, how+" returns synchronous_commit to this session's default, "+value+
			", and is not run on a fenced connection: a commit would then be acknowledged before it is safe (at off before its WAL is flushed, at local before the synchronous standbys have it), and a claim lost that way lets its epoch be issued again while the first holder's writes stand"+where, fix)
	}
	why := dangerousSettings[name]
	return refuse(rulecode.Setting, nil, how+" returns "+name+" to this session's default, "+value+", and is not run on a fenced connection: "+why+where, fix)
}
