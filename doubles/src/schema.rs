// @generated automatically by Diesel CLI.

diesel::table! {
    simulated_account_links (id) {
        id -> Text,
        account -> Text,
        refresh_url -> Text,
        return_url -> Text,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    simulated_accounts (id) {
        id -> Text,
        gateway -> Text,
        email -> Nullable<Text>,
        country -> Text,
        transfers -> Text,
        details_submitted -> Bool,
        metadata -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    simulated_charges (id) {
        id -> Text,
        idempotency_key -> Text,
        amount_cents -> Int8,
        currency -> Text,
        source -> Text,
        description -> Nullable<Text>,
        metadata -> Jsonb,
        status -> Text,
        failure_code -> Nullable<Text>,
        decline_code -> Nullable<Text>,
        created_at -> Timestamptz,
        disputed -> Bool,
    }
}

diesel::table! {
    simulated_events (id) {
        id -> Text,
        seq -> Int8,
        gateway -> Text,
        event_type -> Text,
        object_kind -> Text,
        object_id -> Text,
        created_at -> Timestamptz,
        sending_until -> Nullable<Timestamptz>,
        sent_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    simulated_intent_calls (idempotency_key) {
        idempotency_key -> Text,
        operation -> Text,
        parameters -> Jsonb,
        answer -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    simulated_payment_intents (id) {
        id -> Text,
        client_secret -> Text,
        amount_cents -> Int8,
        amount_capturable_cents -> Int8,
        amount_received_cents -> Int8,
        currency -> Text,
        customer -> Nullable<Text>,
        payment_method -> Text,
        capture_method -> Text,
        return_url -> Nullable<Text>,
        status -> Text,
        latest_charge -> Nullable<Text>,
        last_error_code -> Nullable<Text>,
        last_error_decline_code -> Nullable<Text>,
        last_error_message -> Nullable<Text>,
        cancellation_reason -> Nullable<Text>,
        increments -> Int4,
        authorization_expires_at -> Nullable<Timestamptz>,
        metadata -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        gateway -> Text,
        disputed -> Bool,
        settles_at -> Nullable<Timestamptz>,
        overcapture_max_cents -> Nullable<Int8>,
        captured_at -> Nullable<Timestamptz>,
        transfer_group -> Nullable<Text>,
    }
}

diesel::table! {
    simulated_payouts (id) {
        id -> Text,
        account -> Text,
        currency -> Text,
        amount_cents -> Int8,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    simulated_refunds (id) {
        id -> Text,
        idempotency_key -> Text,
        charge_id -> Nullable<Text>,
        amount_cents -> Int8,
        currency -> Text,
        reason -> Nullable<Text>,
        metadata -> Jsonb,
        status -> Text,
        created_at -> Timestamptz,
        payment_intent -> Nullable<Text>,
        gateway -> Text,
        settles_at -> Nullable<Timestamptz>,
        settles_as -> Nullable<Text>,
    }
}

diesel::table! {
    simulated_transfer_reversals (id) {
        id -> Text,
        transfer -> Text,
        amount_cents -> Int8,
        metadata -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    simulated_transfers (id) {
        id -> Text,
        gateway -> Text,
        amount_cents -> Int8,
        currency -> Text,
        destination -> Text,
        source_transaction -> Text,
        transfer_group -> Nullable<Text>,
        metadata -> Jsonb,
        created_at -> Timestamptz,
        available_at -> Timestamptz,
    }
}

diesel::joinable!(simulated_account_links -> simulated_accounts (account));
diesel::joinable!(simulated_payouts -> simulated_accounts (account));
diesel::joinable!(simulated_refunds -> simulated_payment_intents (payment_intent));
diesel::joinable!(simulated_transfer_reversals -> simulated_transfers (transfer));
diesel::joinable!(simulated_transfers -> simulated_accounts (destination));

diesel::allow_tables_to_appear_in_same_query!(
    simulated_account_links,
    simulated_accounts,
    simulated_charges,
    simulated_events,
    simulated_intent_calls,
    simulated_payment_intents,
    simulated_payouts,
    simulated_refunds,
    simulated_transfer_reversals,
    simulated_transfers,
);
