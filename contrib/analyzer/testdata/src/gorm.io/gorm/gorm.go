// Package gorm is a stub of gorm.io/gorm for the analyzer's tests.
package gorm

type DB struct{ Error error }

func (db *DB) Raw(sql string, values ...any) *DB  { return db }
func (db *DB) Exec(sql string, values ...any) *DB { return db }
func (db *DB) Scan(dest any) *DB                  { return db }
func (db *DB) Where(query any, args ...any) *DB   { return db }
func (db *DB) First(dest any, conds ...any) *DB   { return db }
