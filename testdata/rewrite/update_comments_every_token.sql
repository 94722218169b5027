/*0*/UPDATE/*1*/inventory/*2*/SET/*3*/quantity/*4*/=/*5*/$1/*6*/WHERE/*7*/sku/*8*/=/*9*/$2/*10*/;/*11*/
---- sent ----
/*sqlfence fenced: inventory*/ /*0*/UPDATE/*1*/inventory/*2*/SET/*3*/quantity/*4*/=/*5*/$1, writer_epoch = $3::bigint/*6*/WHERE/*7*/(sku/*8*/=/*9*/$2) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint/*10*/;/*11*/
