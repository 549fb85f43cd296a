DROP TABLE opening_fees;
DROP FUNCTION ridepay_ledger_opening_fee_recorded();
