DROP FUNCTION ridepay_set_session_limits(text, text, text);
