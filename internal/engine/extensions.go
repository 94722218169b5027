// Extension functions in everyday use: pgcrypto's hashes and ciphers, pg_trgm's
// similarity, uuid-ossp's generators, judged by what they are rather than refused as
// unreadable C.

package engine

import "github.com/sqlfence/sqlfence/internal/pgcatalog"

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
