UPDATE inventory SET quantity = 1, writer_epoch = 9 WHERE sku = $1
---- sent ----
REFUSED: sqlfence: refused [SF303]: table inventory: the statement assigns the epoch column writer_epoch itself; remove the assignment; sqlfence sets it from the context's epoch (sqlfence.WithEpoch). From an ORM model with the epoch field: with GORM register the plugin sqlfencegorm.New(policy) (github.com/sqlfence/sqlfence/contrib/gorm) or tag the field `gorm:"->"`; with bun tag it `bun:",scanonly"`
