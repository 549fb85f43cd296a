// @generated automatically by Diesel CLI.

diesel::table! {
    audit_records (id) {
        id -> Int8,
        user_id -> Int8,
        action -> Text,
        resource_type -> Text,
        resource_id -> Int8,
        data -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    charges (id) {
        id -> Text,
        ride_id -> Int8,
        amount_cents -> Int8,
        currency -> Text,
        balance_transaction_id -> Nullable<Text>,
        fee_cents -> Nullable<Int8>,
        created_at -> Timestamptz,
        settled_currency -> Nullable<Text>,
        settled_cents -> Nullable<Int8>,
        payment_intent_id -> Nullable<Text>,
    }
}

diesel::table! {
    drivers (id) {
        id -> Int8,
        public_id -> Bytea,
        idempotency_key_id -> Nullable<Int8>,
        email -> Text,
        country -> Text,
        account_id -> Text,
        payable_code -> Text,
        status -> Text,
        status_checked_at -> Timestamptz,
        onboarding_token_hash -> Bytea,
        onboarding_token_expires_at -> Timestamptz,
        onboarding_link_made_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        event_sequence -> Int8,
    }
}

diesel::table! {
    idempotency_keys (id) {
        id -> Int8,
        user_id -> Int8,
        key -> Text,
        request_method -> Text,
        request_path -> Text,
        request_fingerprint -> Text,
        request_params -> Jsonb,
        lease_epoch -> Int8,
        locked_at -> Nullable<Timestamptz>,
        last_run_at -> Timestamptz,
        recovery_point -> Text,
        response_status -> Nullable<Int2>,
        response_headers -> Nullable<Jsonb>,
        response_body -> Nullable<Bytea>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        attempts -> Int4,
        next_attempt_at -> Nullable<Timestamptz>,
        needs_attention_at -> Nullable<Timestamptz>,
        last_error -> Nullable<Text>,
        endpoint -> Text,
        call_version -> Int2,
        ridepay_key -> Nullable<Text>,
        call_generation -> Int2,
        outcome_unknown_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    idempotent_endpoints (name) {
        name -> Text,
    }
}

diesel::table! {
    installation (singleton) {
        singleton -> Bool,
        installation_id -> Uuid,
        created_at -> Timestamptz,
        id_secret -> Bytea,
        ledger_started_at -> Timestamptz,
    }
}

diesel::table! {
    ledger_accounts (id) {
        id -> Int8,
        code -> Text,
        kind -> Text,
        currency -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    ledger_entries (transaction_id, account_id) {
        transaction_id -> Int8,
        account_id -> Int8,
        amount_cents -> Int8,
    }
}

diesel::table! {
    ledger_transactions (id) {
        id -> Int8,
        public_id -> Bytea,
        kind -> Text,
        source -> Text,
        ride_id -> Nullable<Int8>,
        reverses -> Nullable<Int8>,
        entries_hash -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    opening_fees (balance_transaction_id) {
        balance_transaction_id -> Text,
        charge_id -> Text,
        ride_id -> Int8,
        fee_cents -> Int8,
        currency -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    receipts (id) {
        id -> Int8,
        ride_id -> Int8,
        staged_job_id -> Int8,
        payload -> Jsonb,
        deliveries -> Int4,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    reconciliation (singleton) {
        singleton -> Bool,
        holder -> Nullable<Uuid>,
        held_until -> Nullable<Timestamptz>,
        listed_before -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    recovery_points (endpoint, point) {
        endpoint -> Text,
        point -> Text,
    }
}

diesel::table! {
    refunds (id) {
        id -> Int8,
        ride_id -> Int8,
        user_id -> Int8,
        idempotency_key_id -> Nullable<Int8>,
        amount_cents -> Int8,
        currency -> Text,
        reason -> Nullable<Text>,
        status -> Text,
        gateway_refund_id -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        part_of -> Nullable<Int8>,
        payment_intent_id -> Nullable<Text>,
        public_id -> Bytea,
        legacy_id -> Nullable<Int8>,
    }
}

diesel::table! {
    released_payments (ridepay_key) {
        ridepay_key -> Text,
        payment_intent_id -> Text,
        action -> Text,
        amount_cents -> Int8,
        currency -> Text,
        released_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        charge_id -> Nullable<Text>,
        captured_cents -> Nullable<Int8>,
        balance_transaction_id -> Nullable<Text>,
        fee_cents -> Nullable<Int8>,
        refund_id -> Nullable<Text>,
    }
}

diesel::table! {
    ride_drivers (ride_id) {
        ride_id -> Int8,
        driver_id -> Int8,
        commission_bps -> Int4,
        idempotency_key_id -> Nullable<Int8>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    rides (id) {
        id -> Int8,
        user_id -> Int8,
        idempotency_key_id -> Nullable<Int8>,
        origin_lat -> Float8,
        origin_lon -> Float8,
        target_lat -> Float8,
        target_lon -> Float8,
        amount_cents -> Int8,
        amount_refunded_cents -> Int8,
        currency -> Text,
        payment_method -> Text,
        status -> Text,
        charge_id -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        capture_method -> Text,
        customer -> Nullable<Text>,
        return_url -> Nullable<Text>,
        payment_intent_id -> Nullable<Text>,
        client_secret -> Nullable<Text>,
        next_action -> Nullable<Jsonb>,
        amount_authorized_cents -> Int8,
        amount_captured_cents -> Int8,
        settling_key_id -> Nullable<Int8>,
        amount_capturable_max_cents -> Nullable<Int8>,
        hold_expires_at -> Nullable<Timestamptz>,
        tip_cents -> Int8,
        tip_payment_intent_id -> Nullable<Text>,
        event_sequence -> Int8,
        public_id -> Bytea,
        legacy_id -> Nullable<Int8>,
    }
}

diesel::table! {
    stray_transfers (transfer_id) {
        transfer_id -> Text,
        driver_id -> Int8,
        amount_cents -> Int8,
        currency -> Text,
        ridepay_key -> Text,
        transfer_created_at -> Timestamptz,
        status -> Text,
        generation -> Int2,
        failure_reason -> Nullable<Text>,
        reversal_id -> Nullable<Text>,
        reversed_cents -> Nullable<Int8>,
        found_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    stripe_events (id) {
        id -> Text,
        event_type -> Text,
        event_created -> Timestamptz,
        subject -> Nullable<Text>,
        result -> Text,
        received_at -> Timestamptz,
    }
}

diesel::table! {
    transfer_reversals (id) {
        id -> Int8,
        transfer_id -> Int8,
        refund_id -> Int8,
        driver_id -> Int8,
        currency -> Text,
        amount_cents -> Int8,
        status -> Text,
        failure_reason -> Nullable<Text>,
        gateway_reversal_id -> Nullable<Text>,
        generation -> Int2,
        claimed_until -> Nullable<Timestamptz>,
        claim_epoch -> Int8,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    transfers (id) {
        id -> Int8,
        ride_id -> Int8,
        driver_id -> Int8,
        source_charge -> Text,
        currency -> Text,
        entitled_cents -> Int8,
        amount_cents -> Int8,
        netted_cents -> Int8,
        status -> Text,
        failure_reason -> Nullable<Text>,
        gateway_transfer_id -> Nullable<Text>,
        amount_reversed_cents -> Int8,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        generation -> Int2,
        first_attempt_at -> Nullable<Timestamptz>,
        claimed_until -> Nullable<Timestamptz>,
        claim_epoch -> Int8,
        reowes_reversal_id -> Nullable<Int8>,
    }
}

diesel::table! {
    users (id) {
        id -> Int8,
        email -> Text,
        api_key_hash -> Bytea,
        stripe_customer_id -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        stripe_payment_method_id -> Nullable<Text>,
        public_id -> Uuid,
        role -> Text,
    }
}

diesel::table! {
    webhook_attempts (id) {
        id -> Int8,
        delivery_id -> Int8,
        attempted_at -> Timestamptz,
        http_status -> Nullable<Int2>,
        error -> Nullable<Text>,
        duration_ms -> Int4,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Int8,
        endpoint_id -> Int8,
        event_id -> Text,
        status -> Text,
        attempts -> Int4,
        next_attempt_at -> Timestamptz,
        locked_until -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        public_id -> Bytea,
    }
}

diesel::table! {
    webhook_endpoints (id) {
        id -> Int8,
        user_id -> Nullable<Int8>,
        idempotency_key_id -> Nullable<Int8>,
        url -> Text,
        events -> Array<Nullable<Text>>,
        status -> Text,
        disabled_reason -> Nullable<Text>,
        secret -> Text,
        failing_since -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        previous_secret -> Nullable<Text>,
        previous_secret_expires_at -> Nullable<Timestamptz>,
        public_id -> Bytea,
        legacy_id -> Nullable<Int8>,
    }
}

diesel::table! {
    webhook_events (id) {
        id -> Text,
        user_id -> Nullable<Int8>,
        ride_id -> Nullable<Int8>,
        #[sql_name = "type"]
        type_ -> Text,
        sequence -> Nullable<Int8>,
        body -> Nullable<Bytea>,
        created_at -> Timestamptz,
        snapshot -> Nullable<Jsonb>,
        driver_id -> Nullable<Int8>,
    }
}

diesel::joinable!(audit_records -> users (user_id));
diesel::joinable!(charges -> rides (ride_id));
diesel::joinable!(drivers -> idempotency_keys (idempotency_key_id));
diesel::joinable!(idempotency_keys -> users (user_id));
diesel::joinable!(ledger_entries -> ledger_accounts (account_id));
diesel::joinable!(ledger_entries -> ledger_transactions (transaction_id));
diesel::joinable!(ledger_transactions -> rides (ride_id));
diesel::joinable!(opening_fees -> rides (ride_id));
diesel::joinable!(receipts -> rides (ride_id));
diesel::joinable!(recovery_points -> idempotent_endpoints (endpoint));
diesel::joinable!(refunds -> idempotency_keys (idempotency_key_id));
diesel::joinable!(refunds -> rides (ride_id));
diesel::joinable!(refunds -> users (user_id));
diesel::joinable!(ride_drivers -> drivers (driver_id));
diesel::joinable!(ride_drivers -> idempotency_keys (idempotency_key_id));
diesel::joinable!(ride_drivers -> rides (ride_id));
diesel::joinable!(rides -> users (user_id));
diesel::joinable!(stray_transfers -> drivers (driver_id));
diesel::joinable!(transfer_reversals -> drivers (driver_id));
diesel::joinable!(transfer_reversals -> refunds (refund_id));
diesel::joinable!(transfers -> charges (source_charge));
diesel::joinable!(transfers -> drivers (driver_id));
diesel::joinable!(transfers -> rides (ride_id));
diesel::joinable!(webhook_attempts -> webhook_deliveries (delivery_id));
diesel::joinable!(webhook_deliveries -> webhook_endpoints (endpoint_id));
diesel::joinable!(webhook_deliveries -> webhook_events (event_id));
diesel::joinable!(webhook_endpoints -> idempotency_keys (idempotency_key_id));
diesel::joinable!(webhook_endpoints -> users (user_id));
diesel::joinable!(webhook_events -> drivers (driver_id));
diesel::joinable!(webhook_events -> rides (ride_id));
diesel::joinable!(webhook_events -> users (user_id));

diesel::allow_tables_to_appear_in_same_query!(
    audit_records,
    charges,
    drivers,
    idempotency_keys,
    idempotent_endpoints,
    installation,
    ledger_accounts,
    ledger_entries,
    ledger_transactions,
    opening_fees,
    receipts,
    reconciliation,
    recovery_points,
    refunds,
    released_payments,
    ride_drivers,
    rides,
    stray_transfers,
    stripe_events,
    transfer_reversals,
    transfers,
    users,
    webhook_attempts,
    webhook_deliveries,
    webhook_endpoints,
    webhook_events,
);
