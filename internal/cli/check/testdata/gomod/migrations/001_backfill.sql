UPDATE inventory SET quantity = 0 WHERE quantity IS NULL;
