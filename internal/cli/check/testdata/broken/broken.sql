SELECT 1;
UPDATE inventory SETT quantity = 1;
