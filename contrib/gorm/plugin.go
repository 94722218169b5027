// Package sqlfencegorm makes GORM models work on tables sqlfence protects.
//
// sqlfence owns a protected table's epoch column: it adds the column and the context's
// epoch to every write, and refuses a statement that assigns the column itself. A GORM
// model with a field for the column would have GORM assign it on Create, Save, Updates
// and upserts, so register the plugin with the same policy the driver fences with:
//
//	policy, err := sqlfence.LoadPolicy("sqlfence.yaml")
//	sqlDB, err := sql.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
//	db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{})
//	err = db.Use(sqlfencegorm.New(policy))
//
//	type Item struct {
//		SKU         string `gorm:"primaryKey"`
//		Quantity    int
//		WriterEpoch int64 `gorm:"not null;default:0"` // the policy's epoch column
//	}
//
//	err = db.WithContext(sqlfence.WithEpoch(ctx, lease.Epoch)).Save(&item).Error
//	switch {
//	case errors.Is(err, sqlfence.ErrFenced):         // superseded: stop the handler
//	case errors.Is(err, sqlfence.ErrAlreadyWritten): // strict mode, this epoch wrote the row before
//	}
//
// For each statement on a protected table, the plugin
//
//   - leaves the epoch column out of what GORM writes: the column list and values of
//     Create, the SET of Save, Update and Updates (struct or map), and an upsert's
//     ON CONFLICT DO UPDATE (clause.OnConflict with UpdateAll or DoUpdates), so that
//     sqlfence fences the statement instead of refusing it;
//   - after a write that succeeded, sets the model's epoch field to the context's
//     epoch, which is what sqlfence wrote: on the model for a single row, on every
//     element of a slice only when every element was written (RowsAffected equals the
//     length; with some rows fenced sqlfence cannot say which, so the fields are left
//     as they were — use sqlfence.WithExactAccounting to have that reported as
//     ErrFenced).
//
// sqlfence's errors reach GORM's db.Error unchanged, so errors.Is(db.Error,
// sqlfence.ErrFenced) and errors.As(db.Error, &*sqlfence.Error) work, with or without
// gorm.Config.TranslateError; and inside db.Transaction the callback's error is
// returned as it is.
//
// The epoch field may be of any integer type and may carry the read-only tag
// `gorm:"->"` instead; the plugin then only sets it after writes. Without the plugin,
// a model whose epoch field GORM writes is refused by sqlfence ("assigns the epoch
// column itself"), and a read-only one keeps its zero value after Create.
//
// AutoMigrate runs DDL, which sqlfence refuses on a fenced handle unless the policy
// says `ddl: allow`; without it, migrate through a plain pgx handle.
package sqlfencegorm

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/sqlfence/sqlfence"
)

// Plugin is the GORM plugin; make it with New and register it with db.Use.
type Plugin struct {
	policy *sqlfence.Policy
}

var _ gorm.Plugin = (*Plugin)(nil)

// New returns the plugin for the policy the driver fences with. The plugin reads the
// policy's tables and epoch columns when a statement runs; pass the policy the
// connector was made with (sqlfence.LoadPolicy of the same file).
func New(policy *sqlfence.Policy) *Plugin { return &Plugin{policy: policy} }

// Name implements gorm.Plugin.
func (*Plugin) Name() string { return "sqlfence" }

// Initialize implements gorm.Plugin: it registers the plugin's callbacks around
// gorm:create and gorm:update.
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p.policy == nil {
		return errors.New("sqlfencegorm: nil policy; pass the policy the driver fences with to sqlfencegorm.New")
	}
	cb := db.Callback()
	return errors.Join(
		cb.Create().Before("gorm:create").Register("sqlfence:omit_epoch", p.omitEpoch),
		cb.Create().After("gorm:create").Register("sqlfence:set_epoch", p.setEpoch),
		cb.Update().Before("gorm:update").Register("sqlfence:omit_epoch", p.omitEpoch),
		cb.Update().After("gorm:update").Register("sqlfence:set_epoch", p.setEpoch),
	)
}

// table returns the protected table the statement writes, or nil.
func (p *Plugin) table(db *gorm.DB) *sqlfence.Table {
	name := strings.ReplaceAll(db.Statement.Table, `"`, "")
	if name == "" {
		return nil
	}
	schema := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		schema, name = name[:i], name[i+1:]
	}
	t, _ := p.policy.Match(schema, name)
	return t
}

// omitEpoch keeps GORM from writing the epoch column: it is omitted from the
// statement's columns and assignments, and removed from explicit ON CONFLICT DO UPDATE
// and SET clauses.
func (p *Plugin) omitEpoch(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	t := p.table(db)
	if t == nil {
		return
	}
	col := t.EpochColumn
	stmt := db.Statement
	stmt.Omits = append(stmt.Omits, col)
	isEpoch := func(a clause.Assignment) bool { return a.Column.Name == col }
	if c, ok := stmt.Clauses["ON CONFLICT"]; ok {
		// An upsert that would update nothing but the epoch is left as it is, and
		// refused: dropping its only assignment would turn it into DO NOTHING, which
		// a superseded writer would pass silently.
		if oc, ok := c.Expression.(clause.OnConflict); ok && slices.ContainsFunc(oc.DoUpdates, isEpoch) &&
			(oc.UpdateAll || slices.ContainsFunc(oc.DoUpdates, func(a clause.Assignment) bool { return !isEpoch(a) })) {
			oc.DoUpdates = slices.DeleteFunc(slices.Clone(oc.DoUpdates), isEpoch)
			c.Expression = oc
			stmt.Clauses["ON CONFLICT"] = c
		}
	}
	if c, ok := stmt.Clauses["SET"]; ok {
		if set, ok := c.Expression.(clause.Set); ok && slices.ContainsFunc(set, isEpoch) &&
			slices.ContainsFunc(set, func(a clause.Assignment) bool { return !isEpoch(a) }) {
			c.Expression = slices.DeleteFunc(slices.Clone(set), isEpoch)
			stmt.Clauses["SET"] = c
		}
	}
}

// setEpoch sets the model's epoch field to the epoch sqlfence wrote.
func (p *Plugin) setEpoch(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || db.RowsAffected <= 0 || stmt.Schema == nil || p.policy.Enforce == sqlfence.EnforceShadow {
		return
	}
	epoch, ok := sqlfence.EpochFrom(stmt.Context)
	if !ok {
		return
	}
	t := p.table(db)
	if t == nil {
		return
	}
	f := stmt.Schema.LookUpField(t.EpochColumn)
	if f == nil {
		return
	}
	rv := stmt.ReflectValue
	switch rv.Kind() {
	case reflect.Struct:
		if rv.CanAddr() {
			db.AddError(f.Set(stmt.Context, rv, epoch))
		}
	case reflect.Slice, reflect.Array:
		if int64(rv.Len()) != db.RowsAffected {
			return // some rows were not written, and which is not known
		}
		for i := range rv.Len() {
			if e := rv.Index(i); reflect.Indirect(e).Kind() == reflect.Struct && reflect.Indirect(e).CanAddr() {
				db.AddError(f.Set(stmt.Context, e, epoch))
			}
		}
	}
}
