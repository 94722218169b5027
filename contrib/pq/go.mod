module github.com/sqlfence/sqlfence/contrib/pq

go 1.26

replace github.com/sqlfence/sqlfence => ../..

require github.com/sqlfence/sqlfence v0.0.0-00010101000000-000000000000

require github.com/lib/pq v1.12.3 // indirect
