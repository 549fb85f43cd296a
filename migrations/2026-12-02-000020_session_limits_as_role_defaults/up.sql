-- The service's session limits as its role's defaults in its database, so
-- that every session has them from its start, through any pooler (a SET on
-- a pooled session would hold for whichever client came next). ALTER ROLE
-- takes no bind parameters; this function takes the values as parameters
-- and names them as literals. The calling session, which may be a pooler's
-- server session begun before the defaults changed, gets them too.
CREATE FUNCTION ridepay_set_session_limits(
    statement_timeout text,
    lock_timeout text,
    idle_in_transaction_session_timeout text
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    setting record;
BEGIN
    FOR setting IN
        SELECT * FROM (VALUES
            ('statement_timeout', statement_timeout),
            ('lock_timeout', lock_timeout),
            ('idle_in_transaction_session_timeout', idle_in_transaction_session_timeout)
        ) AS limits (name, value)
    LOOP
        EXECUTE format('ALTER ROLE %I IN DATABASE %I SET %I = %L',
            current_user, current_database(), setting.name, setting.value);
        PERFORM set_config(setting.name, setting.value, false);
    END LOOP;
END
$$;
