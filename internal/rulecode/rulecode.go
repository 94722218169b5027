// Package rulecode is the table of sqlfence's rule codes: one stable code for every
// kind of refusal, unfenced write and fence, assigned where the driver decides it
// and used by sqlfence check. The "Rule codes" table of docs/errors.md documents
// each code; a test keeps the two equal.
package rulecode

// The codes. 1xx: the fence stopped a write; 2xx: a protected write without a usable
// epoch; 3xx: a statement shape the rewrite cannot fence; 4xx: outside the allowlist;
// 5xx: what the catalog shows (resolve: catalog); 6xx: claim discipline and the errors of the claim helpers, the outbox and the relay; 7xx: the
// driver's arguments and session; 8xx: sqlfence check and the Go analyzer only.
const (
	FencedRow      = "SF101"
	FencedClaim    = "SF102"
	FencedEarly    = "SF103"
	AlreadyWritten = "SF110"

	NoEpoch          = "SF201"
	BadEpoch         = "SF202"
	UnfencedDenied   = "SF203"
	RawConnDenied    = "SF204"
	UnfencedPrepared = "SF205"
	UnfencedAllowed  = "SF210"
	RawConnAllowed   = "SF211"

	Truncate          = "SF301"
	CopyFrom          = "SF302"
	AssignsEpoch      = "SF303"
	NoColumnList      = "SF304"
	CurrentOf         = "SF305"
	MultiStatement    = "SF306"
	ParamBelowOne     = "SF307"
	UnfenceablePlace  = "SF308"
	UnknownShape      = "SF309"
	NoEpochColumn     = "SF310"
	AmbiguousName     = "SF311"
	ParseError        = "SF320"
	QuestionMarks     = "SF321"
	TooLarge          = "SF322"
	TooDeep           = "SF323"
	NotAllowlisted    = "SF401"
	FenceDDL          = "SF402"
	CodeDDL           = "SF403"
	Defaults          = "SF404"
	Setting           = "SF405"
	SQLPrepare        = "SF406"
	CopyProgram       = "SF407"
	TruncateCascade   = "SF408"
	SystemRelation    = "SF409"
	ListedFunction    = "SF410"
	SQLTextFunction   = "SF411"
	VolatileBuiltin   = "SF412"
	UnjudgedCall      = "SF413"
	UnreadableBody    = "SF414"
	DynamicSQL        = "SF415"
	BodyWrites        = "SF416"
	SynchronousCommit = "SF417"
	CascadingKey      = "SF501"
	Trigger           = "SF502"
	Rule              = "SF503"
	UnreadableRoutine = "SF504"

	PolicyTableMissing  = "SF520"
	PolicyEpochColumn   = "SF521"
	PolicyNameAmbiguous = "SF522"
	CatalogUnreadable   = "SF523"
	CatalogNotInstalled = "SF524"
	CatalogChanged      = "SF525"
	ClaimWrite          = "SF601"
	ClaimAndProtected   = "SF602"
	ClaimUnusable       = "SF603"
	ClaimLost           = "SF610"
	NoSyncStandby       = "SF611"
	ClaimUnknown        = "SF612"
	ClaimEnded          = "SF613"
	NoJob               = "SF614"
	NotClaimable        = "SF615"
	LeaseLost           = "SF616"
	HelperConfig        = "SF617"
	HelperDatabase      = "SF618"
	OutboxKeyReused     = "SF620"
	OutboxSend          = "SF621"
	RewritingArgument   = "SF701"
	ArgumentCount       = "SF702"
	PreparedChanged     = "SF703"
	SessionSettings     = "SF704"
	GuardMarker         = "SF705"
	ServerVersion       = "SF706"
	BehindHistory       = "SF707"
	OtherCluster        = "SF708"
	SessionCommit       = "SF709"
	OptionArgument      = "SF710"
	GuardSettingMissing = "SF711"
	ReplicationRole     = "SF712"

	CheckUnfencedWrite = "SF801"
	CheckOpaque        = "SF802"
	CheckIgnoreNoWhy   = "SF803"
	CheckUnusedIgnore  = "SF804"
	DynamicWrite       = "SF805"
)

// Kind says what a code reports.
type Kind string

const (
	KindFenced         Kind = "fenced"          // ErrFenced
	KindAlreadyWritten Kind = "already written" // ErrAlreadyWritten
	KindUnfenced       Kind = "unfenced"        // ErrUnfenced, or an unfenced write let through (logged)
	KindRefused        Kind = "refused"         // ErrRefused
	KindCheck          Kind = "check"           // a finding of sqlfence check only
	KindClaim          Kind = "claim"           // an error of the claim helpers (package claim)
)

// Info is one code's row in the table.
type Info struct {
	Code  string
	Kind  Kind
	Title string
}

// All lists every code, in order.
var All = []Info{
	{FencedRow, KindFenced, "a newer epoch is stored on the rows the write matched"},
	{FencedClaim, KindFenced, "the claim the write runs under was superseded"},
	{FencedEarly, KindFenced, "the early check found a newer epoch"},
	{AlreadyWritten, KindAlreadyWritten, "strict mode: this epoch already wrote the row"},
	{NoEpoch, KindUnfenced, "a protected write without an epoch on the context"},
	{BadEpoch, KindUnfenced, "the context's epoch is not positive"},
	{UnfencedDenied, KindUnfenced, "sqlfence.Unfenced under unfenced: deny"},
	{RawConnDenied, KindUnfenced, "RawConn without sqlfence.Unfenced and unfenced: allow"},
	{UnfencedPrepared, KindUnfenced, "a prepared protected write run under sqlfence.Unfenced"},
	{UnfencedAllowed, KindUnfenced, "an unfenced write let through by sqlfence.Unfenced (logged, not an error)"},
	{RawConnAllowed, KindUnfenced, "a raw connection handed out by RawConn (logged, not an error)"},
	{Truncate, KindRefused, "TRUNCATE of a protected table"},
	{CopyFrom, KindRefused, "COPY FROM into a protected table"},
	{AssignsEpoch, KindRefused, "the statement assigns the epoch column itself"},
	{NoColumnList, KindRefused, "INSERT into a protected table without a column list"},
	{CurrentOf, KindRefused, "UPDATE or DELETE … WHERE CURRENT OF"},
	{MultiStatement, KindRefused, "a string of several statements writes a protected table"},
	{ParamBelowOne, KindRefused, "a parameter numbered below $1"},
	{UnfenceablePlace, KindRefused, "a protected write where the fence cannot go"},
	{UnknownShape, KindRefused, "a statement shape the rewrite does not understand"},
	{NoEpochColumn, KindRefused, "a write through a view or child that has no epoch column"},
	{AmbiguousName, KindRefused, "an unqualified name matching policy entries that differ"},
	{ParseError, KindRefused, "the statement does not parse"},
	{QuestionMarks, KindRefused, "the statement uses ? placeholders"},
	{TooLarge, KindRefused, "the statement or body is larger than sqlfence parses"},
	{TooDeep, KindRefused, "the statement or body is nested deeper than sqlfence parses"},
	{NotAllowlisted, KindRefused, "DDL or a statement outside the allowlist (ddl: deny)"},
	{FenceDDL, KindRefused, "DDL that changes which rows are protected or how the fence reads them"},
	{CodeDDL, KindRefused, "DDL that creates code sqlfence cannot read"},
	{Defaults, KindRefused, "changing server, database or role defaults"},
	{Setting, KindRefused, "changing a setting not on the list of harmless ones"},
	{SQLPrepare, KindRefused, "SQL-level PREPARE or EXECUTE"},
	{CopyProgram, KindRefused, "COPY to or from a server file or program"},
	{TruncateCascade, KindRefused, "TRUNCATE … CASCADE"},
	{SystemRelation, KindRefused, "a write to a system relation"},
	{ListedFunction, KindRefused, "a call of a function the policy lists as writing protected tables"},
	{SQLTextFunction, KindRefused, "a call of a function that runs the SQL text it is given"},
	{VolatileBuiltin, KindRefused, "a call of a volatile built-in not on sqlfence's list"},
	{UnjudgedCall, KindRefused, "a call sqlfence cannot judge"},
	{UnreadableBody, KindRefused, "a DO block or routine body sqlfence cannot read"},
	{DynamicSQL, KindRefused, "a body that runs dynamic SQL (EXECUTE)"},
	{BodyWrites, KindRefused, "a body or rule that writes a protected table"},
	{SynchronousCommit, KindRefused, "setting synchronous_commit to off or local, which acknowledge a commit before it is safe"},
	{CascadingKey, KindRefused, "a foreign key action cascades into a protected table"},
	{Trigger, KindRefused, "a trigger can change the epoch column, redirect the write, or write unfenced"},
	{Rule, KindRefused, "a rule replaces or extends the write with unfenced statements"},
	{UnreadableRoutine, KindRefused, "a routine the catalog does not show in a form sqlfence reads"},
	{PolicyTableMissing, KindRefused, "a protected or claim table of the policy does not exist in the database"},
	{PolicyEpochColumn, KindRefused, "a protected or claim table's epoch column is missing, not bigint, or nullable"},
	{PolicyNameAmbiguous, KindRefused, "an unqualified policy name matches tables in several schemas of the search path"},
	{CatalogUnreadable, KindRefused, "the role cannot read the catalog that resolve: catalog reads"},
	{CatalogNotInstalled, KindRefused, "a write while the database has no catalog version (sqlfence guard --apply)"},
	{CatalogChanged, KindRefused, "the catalog changed since the statement was decided (retryable)"},
	{ClaimWrite, KindRefused, "a write to a claim table's epoch or status column outside the claim helpers"},
	{ClaimAndProtected, KindRefused, "one statement writes a protected table and the claim table"},
	{ClaimUnusable, KindRefused, "the context's claim (sqlfence.WithClaim) cannot be used"},
	{ClaimLost, KindClaim, "the arbiter lost the lease's claim, or failed over under it (claim.ErrFailover)"},
	{NoSyncStandby, KindClaim, "a claim refused while the arbiter has no synchronous standby (claim.ErrNoSynchronousStandby)"},
	{ClaimUnknown, KindClaim, "a claim whose connection was lost in flight: it may have committed (claim.ErrOutcomeUnknown)"},
	{ClaimEnded, KindClaim, "an operation on a lease that was completed, released or stopped (claim.ErrEnded)"},
	{NoJob, KindClaim, "no job is pending and available (claim.ErrNoJob)"},
	{NotClaimable, KindClaim, "the job asked for is held by a live claim, not yet available, done or missing (claim.ErrNotClaimable, claim.ErrDone)"},
	{LeaseLost, KindClaim, "the lease could not be renewed before it ran out (claim.ErrLeaseLost)"},
	{HelperConfig, KindClaim, "a configuration or argument the claim helpers, the outbox or the relay refuse"},
	{HelperDatabase, KindClaim, "the database failed a statement of the claim helpers, the outbox or the relay (its error follows)"},
	{OutboxKeyReused, KindClaim, "an effect key that already holds a different outbox message (outbox.ErrKeyReused)"},
	{OutboxSend, KindClaim, "the relay's delivery of an outbox message failed (retried with backoff, parked after MaxAttempts)"},
	{RewritingArgument, KindRefused, "a named argument or an argument that rewrites the SQL text"},
	{ArgumentCount, KindRefused, "the arguments do not match the statement's parameters"},
	{PreparedChanged, KindRefused, "a prepared statement that the changed catalog decides differently"},
	{SessionSettings, KindRefused, "the session reads text differently from sqlfence"},
	{GuardMarker, KindRefused, "the text carries the guard's marker, which only sqlfence may write"},
	{ServerVersion, KindRefused, "a construct the connection's server version reads differently from sqlfence's parser"},
	{BehindHistory, KindRefused, "a server behind one this connector already used (an older timeline)"},
	{OtherCluster, KindRefused, "a server of another cluster (system identifier)"},
	{SessionCommit, KindRefused, "a session whose synchronous_commit is off or local"},
	{OptionArgument, KindRefused, "a rewriter returned an argument pgx would read as one of its options"},
	{GuardSettingMissing, KindRefused, "a pgx pool or connection without the guard's session setting, on a database with the guard"},
	{ReplicationRole, KindRefused, "a session whose session_replication_role is not origin"},
	{CheckUnfencedWrite, KindCheck, "a write to a protected table outside the driver, not fenced by hand"},
	{CheckOpaque, KindCheck, "a statement outside the driver whose writes no epoch reaches"},
	{CheckIgnoreNoWhy, KindCheck, "sqlfence:ignore without a reason"},
	{CheckUnusedIgnore, KindCheck, "sqlfence:ignore that suppresses nothing"},
	{DynamicWrite, KindCheck, "a write to a protected table whose SQL text is not known before it runs"},
}

// Lookup returns the row of code.
func Lookup(code string) (Info, bool) {
	for _, i := range All {
		if i.Code == code {
			return i, true
		}
	}
	return Info{}, false
}

// DocFile is the document, relative to the repository, whose "Rule codes" table
// documents every code.
const DocFile = "docs/errors.md"

// HelpURI is where a code is documented: its anchor in DocFile.
func HelpURI(code string) string {
	return "https://github.com/sqlfence/sqlfence/blob/main/" + DocFile + "#" + anchor(code)
}

func anchor(code string) string {
	b := []byte(code)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
