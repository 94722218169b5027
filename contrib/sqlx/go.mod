module github.com/sqlfence/sqlfence/contrib/sqlx

go 1.26

replace github.com/sqlfence/sqlfence => ../..

require github.com/sqlfence/sqlfence v0.0.0-00010101000000-000000000000

require github.com/jmoiron/sqlx v1.4.0 // indirect
