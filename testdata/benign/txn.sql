-- Transaction control as text (database/sql's Tx sends none of it, but ORMs' nested
-- transactions, migration tools and psql-style scripts do). Run in order on one
-- connection. Format: see the comment at the top of benign_test.go.

--! setup
CREATE TABLE accounts (id int PRIMARY KEY, balance numeric NOT NULL);
INSERT INTO accounts VALUES (1, 100), (2, 50);

--! name: txn-begin
BEGIN

--! name: txn-write-in-transaction
--! args: [10, 1]
UPDATE accounts SET balance = balance - $1 WHERE id = $2

--! name: txn-savepoint
SAVEPOINT sp1

--! name: txn-release
RELEASE SAVEPOINT sp1

--! name: txn-savepoint-gorm
--! source: gorm nested transaction
SAVEPOINT sp0x140001a2b30

--! name: txn-rollback-to-savepoint
ROLLBACK TO SAVEPOINT sp0x140001a2b30

--! name: txn-release-bare
--! source: RELEASE without the SAVEPOINT keyword
SAVEPOINT "inner"

--! name: txn-release-bare-2
RELEASE "inner"

--! name: txn-commit
COMMIT

--! name: txn-begin-serializable
BEGIN ISOLATION LEVEL SERIALIZABLE

--! name: txn-set-transaction
SET TRANSACTION READ ONLY

--! name: txn-read-in-transaction
SELECT sum(balance) FROM accounts

--! name: txn-rollback
ROLLBACK

--! name: txn-start-transaction
START TRANSACTION READ WRITE, ISOLATION LEVEL REPEATABLE READ

--! name: txn-set-local
SET LOCAL statement_timeout = '3s'

--! name: txn-set-local-lock-timeout
SET LOCAL lock_timeout = '1s'

--! name: txn-abort
ABORT

--! name: txn-begin-work
BEGIN WORK

--! name: txn-end
END

--! name: txn-begin-transaction
BEGIN TRANSACTION

--! name: txn-commit-and-no-chain
COMMIT AND NO CHAIN
