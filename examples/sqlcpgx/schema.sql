CREATE TABLE inventory (
    sku          text PRIMARY KEY,
    quantity     integer NOT NULL,
    writer_epoch bigint NOT NULL DEFAULT 0 -- sqlfence's epoch column
);
