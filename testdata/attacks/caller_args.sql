-- Class 10: what the caller passes besides the text.
--
-- Caller-owned memory: sqlfence remembers the last decisions of a connection keyed by the
-- query string. A caller that builds queries in one reused []byte and passes
-- unsafe.String over it (a zero-copy query builder) changes the bytes behind a
-- remembered key: the next statement, written into the same buffer with the same length,
-- compares equal to the remembered one and gets its decision. (reuse=BUF pads every text
-- for BUF to one length.)
--
-- pgx query rewriters: pgx applies a pgx.QueryRewriter argument (pgx.NamedArgs is one)
-- after sqlfence decided the text. A rewriter can return any SQL at all; on a statement
-- sqlfence passes through, nothing checks its arguments.
--
-- Format: see the comment at the top of attack_test.go.

--! name: reused-buffer-read-then-delete
--! class: caller-args
--! exec reuse=q
SELECT sku FROM inventory WHERE sku = 'a'
--! exec reuse=q
DELETE FROM inventory WHERE sku = 'a'

--! name: reused-buffer-select-then-update
--! class: caller-args
--! exec reuse=q
SELECT 1
--! exec reuse=q
UPDATE inventory SET quantity = 0

--! name: reused-buffer-query-path
--! class: caller-args
--! query reuse=q
SELECT count(*) FROM staging
--! query reuse=q
DELETE FROM inventory RETURNING sku

--! name: reused-buffer-prepare-path
--! class: caller-args
--! prepare run reuse=q
SELECT count(*) FROM staging
--! prepare run reuse=q
UPDATE billing.invoices SET total = 0

--! name: reused-buffer-then-truncate
--! class: caller-args
--! exec reuse=q
SELECT now()
--! exec reuse=q
TRUNCATE inventory

--! name: reused-buffer-then-multi-statement
--! class: caller-args
--! exec reuse=q
SELECT 1
--! exec reuse=q
SELECT 1; DELETE FROM inventory

--! name: reused-buffer-fenced-then-other
--! class: caller-args
--! note: control: a remembered rewrite sends its own fenced text, not the new bytes
--! exec reuse=q
UPDATE inventory SET quantity = 1 WHERE sku = 'a'
--! exec reuse=q
DELETE FROM inventory WHERE sku = 'b'

--! name: reused-buffer-across-connections
--! class: caller-args
--! note: control: the memory is per connection, and the shared cache keeps its own copy of the key
--! exec reuse=q
SELECT 1
--! reconnect
--! exec reuse=q
DELETE FROM inventory WHERE sku = 'a'

--! name: rewriter-select-to-delete
--! class: caller-args
--! exec rewrite
SELECT 1
--! to
DELETE FROM inventory WHERE sku = 'a'

--! name: rewriter-read-of-protected-to-update
--! class: caller-args
--! query rewrite
SELECT count(*) FROM inventory
--! to
UPDATE inventory SET quantity = 0 RETURNING sku

--! name: rewriter-to-multi-statement
--! class: caller-args
--! exec rewrite
SELECT 1
--! to
SELECT 1; UPDATE billing.invoices SET total = 0

--! name: rewriter-on-protected-write
--! class: caller-args
--! note: control: a rewriter on a protected statement is refused
--! exec rewrite
UPDATE inventory SET quantity = 1 WHERE sku = 'a'
--! to
UPDATE inventory SET quantity = 0

--! name: named-args-unprotected
--! class: caller-args
--! note: control: pgx.NamedArgs only turns @name into $n
--! exec named={"q": 0, "sku": "a"}
UPDATE staging SET q = @q WHERE sku = @sku

--! name: named-args-protected
--! class: caller-args
--! note: control: named arguments on a protected statement are refused
--! exec named={"q": 0, "sku": "a"}
UPDATE inventory SET quantity = @q WHERE sku = @sku

--! name: named-args-in-quoted-text
--! class: caller-args
--! note: control: pgx's lexer skips strings, quoted names, comments and dollar quotes as PostgreSQL does
--! query named={"x": "a"}
SELECT $$ @x $$, ' @x ', E' \' @x ', " @x " FROM (SELECT 1 AS " @x ") s /* @x /* @x */ */ WHERE @x::text = 'a'

--! name: simple-protocol-argument-injection
--! class: caller-args
--! note: control: pgx quotes arguments it interpolates for the simple protocol
--! exec simple args=["x'); DELETE FROM inventory; --"]
SELECT $1::text

--! name: simple-protocol-after-client-encoding
--! class: caller-args
--! note: control: pgx refuses to interpolate unless client_encoding is UTF8 and standard_conforming_strings on
--! exec
SET client_encoding = 'SJIS'
--! exec simple args=["さ\\'); DELETE FROM inventory; --"]
SELECT $1::text

-- The simple protocol: pgx interpolates the arguments into the text on the client,
-- after sqlfence decided, with a lexer of its own. Where that lexer and PostgreSQL's
-- disagree (pgx reads e' after any identifier as the start of an E'…' string, so in
-- name'\' it sees the backslash escape a quote), a placeholder sqlfence and the server
-- read inside a string is substituted, and the argument's quotes end the string:
-- the argument becomes statements. sqlfence sends every statement with arguments
-- with the extended protocol, where text and arguments travel apart.

--! name: simple-protocol-lexer-mismatch-read
--! class: caller-args
--! query simple args=[" || 1; DELETE FROM inventory; SELECT "]
SELECT name'\', '$1'

--! name: simple-protocol-lexer-mismatch-dsn-default
--! class: caller-args
--! dsn: default_query_exec_mode=simple_protocol
--! exec args=[" || 1; UPDATE inventory SET quantity = 0; SELECT "]
SELECT name'\', '$1'

--! name: simple-protocol-lexer-mismatch-dsn-driver
--! class: caller-args
--! open: driver
--! dsn: default_query_exec_mode=simple_protocol
--! query args=[" || 1; DELETE FROM inventory; SELECT "]
SELECT name'\', '$1'

--! name: simple-protocol-lexer-mismatch-fenced-write
--! class: caller-args
--! dsn: default_query_exec_mode=simple_protocol
--! exec args=[" || 1; UPDATE inventory SET quantity = 0, epoch = 1; SELECT "]
UPDATE inventory SET quantity = quantity WHERE sku = name'\' || '$1'

--! name: simple-protocol-lexer-mismatch-exec-mode-exec
--! class: caller-args
--! note: control: QueryExecModeExec sends the text and the arguments apart
--! dsn: default_query_exec_mode=exec
--! exec args=[" || 1; DELETE FROM inventory; SELECT "]
SELECT name'\', '$1'
