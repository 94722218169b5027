// Extensions shipped with PostgreSQL: which ones a fenced connection may create under
// `ddl: allow`, and their functions in everyday use — pgcrypto's hashes and ciphers,
// pg_trgm's similarity, uuid-ossp's generators — judged by what they are rather than
// refused as unreadable C.

package engine

import (
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// shippedExtensions are the extensions of PostgreSQL's own contrib tree that CREATE
// EXTENSION may install on a fenced connection under `ddl: allow`. Each was reviewed
// for what its install script and its objects do: the script only creates types,
// functions, operators, casts on its own types, operator classes and index or
// table-sampling methods — it writes no table, adds no trigger, rule or event
// trigger, changes no setting — and no function it creates writes a table or runs
// SQL text. None requires another extension, so CASCADE installs nothing more. What
// the extension then puts in the catalog is read like any other object (resolve:
// catalog): its C functions marked IMMUTABLE or STABLE at their marking, its
// VOLATILE ones only when reviewed below (reviewedExtensions), every operator by its
// function. The control and script files are the server's, which only whoever
// administers its file system can change.
//
// Left out on purpose: dblink and postgres_fdw (they run SQL on another connection,
// which may be this database's, out of the fence's sight), tablefunc and xml2 (they
// run SQL text they are given), refint, lo, tcn and the other trigger modules (their
// functions are triggers that write or delete rows), pg_surgery and pageinspect
// (they change or read heap pages directly), and the rest, which applications
// rarely create at run time.
var shippedExtensions = nameSet("pgcrypto", "uuid-ossp", "citext", "hstore", "pg_trgm", "fuzzystrmatch",
	"unaccent", "btree_gin", "btree_gist", "cube", "intarray", "isn", "ltree", "seg", "bloom",
	"tsm_system_rows", "tsm_system_time")

// admitExtension judges CREATE EXTENSION under `ddl: allow`: one PostgreSQL ships and
// sqlfence reviewed runs as written, IF NOT EXISTS or not; any other is refused,
// IF NOT EXISTS included — when another session drops the extension first, the
// statement runs its install script, whose effect sqlfence cannot read.
func admitExtension(c *pg.CreateExtensionStmt) *Error {
	if shippedExtensions[c.Extname] {
		return nil
	}
	names := make([]string, 0, len(shippedExtensions))
	for n := range shippedExtensions {
		names = append(names, n)
	}
	sort.Strings(names)
	return refuse(rulecode.CodeDDL, nil, "CREATE EXTENSION "+sqlident.Quote(c.Extname)+
		" runs an install script whose effect on protected tables sqlfence cannot read (IF NOT EXISTS too: if another session drops the extension first, the script runs), so it is not run on a fenced connection even with `ddl: allow`; the extensions shipped with PostgreSQL that sqlfence reviewed are "+strings.Join(names, ", "),
		"create the extension as a reviewed migration outside the driver")
}

// reviewedExtensions are, per extension, its functions reviewed to compute a value
// from their arguments (and, for the generators, the server's random source or clock)
// and touch no table, no setting and no other session. A function counts only when
// the catalog shows it belongs to that extension (pg_depend) and is still its C code:
// CREATE OR REPLACE of an extension's function keeps it a member, with a new body.
var reviewedExtensions = map[string]map[string]bool{
	"pgcrypto": nameSet("digest", "hmac", "crypt", "gen_salt", "gen_random_bytes", "gen_random_uuid",
		"encrypt", "decrypt", "encrypt_iv", "decrypt_iv",
		"pgp_sym_encrypt", "pgp_sym_decrypt", "pgp_sym_encrypt_bytea", "pgp_sym_decrypt_bytea",
		"pgp_pub_encrypt", "pgp_pub_decrypt", "pgp_pub_encrypt_bytea", "pgp_pub_decrypt_bytea",
		"pgp_key_id", "armor", "dearmor", "pgp_armor_headers"),
	"pg_trgm": nameSet("similarity", "word_similarity", "strict_word_similarity", "show_trgm", "show_limit",
		"similarity_op", "word_similarity_op", "word_similarity_commutator_op",
		"strict_word_similarity_op", "strict_word_similarity_commutator_op",
		"similarity_dist", "word_similarity_dist_op", "word_similarity_dist_commutator_op",
		"strict_word_similarity_dist_op", "strict_word_similarity_dist_commutator_op"),
	"uuid-ossp": nameSet("uuid_generate_v1", "uuid_generate_v1mc", "uuid_generate_v3", "uuid_generate_v4",
		"uuid_generate_v5", "uuid_nil", "uuid_ns_dns", "uuid_ns_url", "uuid_ns_oid", "uuid_ns_x500"),
}

func nameSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// reviewedExtensionFunction reports whether f is a reviewed extension's own function.
func reviewedExtensionFunction(f *pgcatalog.Function) bool {
	return f.Language == "c" && f.Kind == "f" && reviewedExtensions[f.Extension][f.Name]
}

// extensionCall reports whether a call of schema.name, read against the catalog,
// can reach only reviewed extension functions. Any other routine of that name (a
// user function in another schema that search_path may put first, or one that
// overloads it) leaves the call to be judged by the bodies it may reach.
func (p *Policy) extensionCall(schema, name string) bool {
	if p.catalog == nil || schema == "pg_catalog" {
		return false
	}
	cands := p.catalog.candidates(schema, name)
	for _, f := range cands {
		if !reviewedExtensionFunction(f) {
			return false
		}
	}
	return len(cands) > 0
}
