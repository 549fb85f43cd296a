//! One behavioural suite, run against every gateway: the in-process simulated
//! gateway, and the Stripe client talking HTTP to the fake gateway on
//! loopback. Both must answer each scenario the same way.

use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::payments::{
    Account, BalanceTransactionPage, CancelIntent, CapabilityStatus, CaptureIntent, CaptureMethod,
    CreateAccount, CreateAccountLink, CreateIntent, GatewayError, HoldRequest, IncrementIntent,
    IntentStatus, ListAccounts, ListBalanceTransactions, ListIntents, Payment, PaymentGateway,
    PaymentIntent, RefundRequest, RefundState, StripeGateway,
};
use ridepay_doubles::accounts::{self, Onboarded};
use ridepay_doubles::events::Double;
use ridepay_doubles::{intents, SimulatedGateway};

use crate::common::database::count;
use crate::common::gateway::{
    capture_request, intent_request, start_fake_gateway, stripe_settings,
};

pub(crate) type Gateway = dyn PaymentGateway;

/// Gateways over one records database, each with its own faults.
pub(crate) trait GatewayUnderTest {
    /// Which double's records its accounts and events are.
    fn double(&self) -> Double;

    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<Gateway>;
    fn records_url(&self) -> &str;

    fn healthy(&self) -> Box<Gateway> {
        self.gateway(SimulatedGatewaySettings::default())
    }

    fn records(&self) -> PgConnection {
        PgConnection::establish(self.records_url()).unwrap()
    }
}

pub(crate) struct Simulated {
    pub(crate) records_url: String,
}

impl GatewayUnderTest for Simulated {
    fn double(&self) -> Double {
        Double::Simulated
    }

    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<Gateway> {
        let pool = crate::common::settings::pool(&self.records_url);
        Box::new(SimulatedGateway::new(pool, faults))
    }

    fn records_url(&self) -> &str {
        &self.records_url
    }
}

/// A fake gateway per set of faults, all on the same records database, as
/// several Stripe servers behind one API would be.
pub(crate) struct StripeOverHttp {
    pub(crate) records_url: String,
}

impl GatewayUnderTest for StripeOverHttp {
    fn double(&self) -> Double {
        Double::Fake
    }

    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<Gateway> {
        let fake = start_fake_gateway(&self.records_url, faults);
        Box::new(StripeGateway::new(&stripe_settings(&fake)).unwrap())
    }

    fn records_url(&self) -> &str {
        &self.records_url
    }
}

fn a_failure_before_acting_is_unavailable_and_holds_nothing(under_test: &impl GatewayUnderTest) {
    let failing = under_test.gateway(SimulatedGatewaySettings {
        fail_rate: 1.0,
        ..Default::default()
    });
    let request = intent_request("failing", "pm_card_visa", CaptureMethod::Manual);
    let failed = failing.create_intent(&request).unwrap_err();
    // Over HTTP a 500 says nothing about whether it acted: the client may
    // only assume the worst; the simulated gateway knows.
    assert!(
        matches!(
            failed,
            GatewayError::Unavailable { .. } | GatewayError::OutcomeUnknown { .. }
        ),
        "{failed:?}"
    );
    assert_eq!(intents_held(under_test), 0);
    let retried = under_test.healthy().create_intent(&request);
    assert!(retried.is_ok(), "{retried:?}");
    assert_eq!(intents_held(under_test), 1);
}

fn paid(gateway: &Gateway, key: &str, payment_method: &str) -> PaymentIntent {
    gateway
        .create_intent(&intent_request(
            key,
            payment_method,
            CaptureMethod::Automatic,
        ))
        .unwrap()
}

fn refund(key: &str, intent: &str, amount: i64) -> RefundRequest {
    RefundRequest {
        idempotency_key: key.to_owned(),
        payment: Payment::Intent(intent.to_owned()),
        amount_cents: amount,
        reason: Some("requested_by_customer".to_owned()),
        metadata: vec![("refund_id".to_owned(), "1".to_owned())],
    }
}

fn refunds(under_test: &impl GatewayUnderTest) -> i64 {
    count(&mut under_test.records(), "simulated_refunds")
}

fn partial_refunds_add_up_and_never_exceed_what_was_paid(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let intent = paid(&*gateway, "paid", "pm_card_visa");

    let part = gateway.refund(&refund("r1", &intent.id, 500)).unwrap();
    let rest = gateway.refund(&refund("r2", &intent.id, 1500)).unwrap();
    let beyond = gateway.refund(&refund("r3", &intent.id, 1)).unwrap_err();

    assert_eq!((part.amount_cents, rest.amount_cents), (500, 1500));
    assert_eq!(
        (
            part.payment_intent.as_deref(),
            part.currency.as_str(),
            part.status
        ),
        (Some(intent.id.as_str()), "eur", RefundState::Succeeded)
    );
    assert_eq!(part.charge, intent.latest_charge);
    assert!(
        matches!(beyond, GatewayError::Rejected { .. }),
        "{beyond:?}"
    );
    let listed = gateway
        .refunds_of(&Payment::Intent(intent.id.clone()))
        .unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(
        listed[0].metadata.get("refund_id").map(String::as_str),
        Some("1")
    );
    assert_eq!(refunds(under_test), 2);
}

fn the_same_refund_key_gives_the_same_refund_and_other_parameters_are_refused(
    under_test: &impl GatewayUnderTest,
) {
    let gateway = under_test.healthy();
    let intent = paid(&*gateway, "paid", "pm_card_visa");

    let first = gateway.refund(&refund("once", &intent.id, 700)).unwrap();
    let again = gateway.refund(&refund("once", &intent.id, 700)).unwrap();
    let other = gateway
        .refund(&refund("once", &intent.id, 800))
        .unwrap_err();

    assert_eq!(first, again);
    assert!(
        matches!(other, GatewayError::Misconfigured { .. }),
        "{other:?}"
    );
    assert_eq!(refunds(under_test), 1);
}

fn refunds_of_unknown_or_unpaid_intents_are_rejected(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let held = hold(&*gateway, "held", "pm_card_visa");

    for intent in [held.id.as_str(), "pi_nope"] {
        let refused = gateway.refund(&refund(intent, intent, 100)).unwrap_err();
        assert!(
            matches!(refused, GatewayError::Rejected { .. }),
            "{refused:?}"
        );
    }
    assert_eq!(refunds(under_test), 0);
}

fn a_lost_refund_response_is_unknown_and_a_retry_gets_the_same_refund(
    under_test: &impl GatewayUnderTest,
) {
    let intent = paid(&*under_test.healthy(), "paid", "pm_card_visa");
    let lossy = under_test.gateway(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..Default::default()
    });

    let lost = lossy.refund(&refund("lost", &intent.id, 300)).unwrap_err();
    let retried = under_test
        .healthy()
        .refund(&refund("lost", &intent.id, 300))
        .unwrap();

    assert!(
        matches!(lost, GatewayError::OutcomeUnknown { .. }),
        "{lost:?}"
    );
    assert_eq!(retried.amount_cents, 300);
    assert_eq!(refunds(under_test), 1);
}

/// Waits for the doubles' clock to settle what it settles later.
fn after_settling() {
    std::thread::sleep(ridepay_doubles::refunds::SETTLES_AFTER + Duration::from_millis(300));
}

fn refunds_that_settle_later_do_as_their_test_cards_say(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let cases = [
        (
            "pm_card_pendingRefund",
            RefundState::Pending,
            RefundState::Succeeded,
        ),
        (
            "pm_card_refundFail",
            RefundState::Succeeded,
            RefundState::Failed,
        ),
        (
            "pm_card_ridepay_pendingRefundFails",
            RefundState::Pending,
            RefundState::Failed,
        ),
    ];
    let made: Vec<_> = cases
        .iter()
        .map(|(method, first, _)| {
            let intent = paid(&*gateway, method, method);
            let refund = gateway
                .refund(&refund(&format!("r-{method}"), &intent.id, 2000))
                .unwrap();
            assert_eq!(refund.status, *first, "{method}");
            intent
        })
        .collect();
    after_settling();
    for ((method, _, last), intent) in cases.iter().zip(&made) {
        let listed = gateway
            .refunds_of(&Payment::Intent(intent.id.clone()))
            .unwrap();
        assert_eq!(
            listed.iter().map(|r| r.status).collect::<Vec<_>>(),
            [*last],
            "{method}"
        );
    }
    // A refund that failed gives its amount back to refund again.
    let failed = &made[1];
    assert!(gateway.refund(&refund("again", &failed.id, 2000)).is_ok());
}

fn refunds_of_charges_made_before_payment_intents_are_made_on_the_charge(
    under_test: &impl GatewayUnderTest,
) {
    diesel::sql_query(
        "INSERT INTO simulated_charges (id, idempotency_key, amount_cents, currency, source, status) \
         VALUES ('ch_legacy', 'legacy-key', 2000, 'usd', 'tok_visa', 'succeeded')",
    )
    .execute(&mut under_test.records())
    .unwrap();
    let gateway = under_test.healthy();
    let legacy = Payment::Charge("ch_legacy".to_owned());

    let made = gateway
        .refund(&RefundRequest {
            payment: legacy.clone(),
            ..refund("legacy", "", 1200)
        })
        .unwrap();

    assert_eq!(
        (
            made.charge.as_deref(),
            made.payment_intent.as_deref(),
            made.status
        ),
        (Some("ch_legacy"), None, RefundState::Succeeded)
    );
    assert_eq!(gateway.refunds_of(&legacy).unwrap(), [made]);
}

fn a_disputed_payment_says_so(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let intent = paid(&*gateway, "paid", "pm_card_visa");
    assert!(!intent.disputed);
    assert!(intents::open_dispute(&mut under_test.records(), &intent.id).unwrap());
    assert!(
        gateway
            .retrieve_intent(&intent.id)
            .unwrap()
            .unwrap()
            .disputed
    );
}

fn a_hold_lapses_and_is_canceled_automatically(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let held = hold(&*gateway, "held", "pm_card_visa");
    intents::lapse_now(&mut under_test.records(), &held.id).unwrap();

    let lapsed = gateway.retrieve_intent(&held.id).unwrap().unwrap();
    let late = capture(&*gateway, "late", &held.id, 2000);

    assert_eq!(
        (lapsed.status, lapsed.cancellation_reason.as_deref()),
        (IntentStatus::Canceled, Some("automatic"))
    );
    assert!(
        matches!(late, Err(GatewayError::Rejected { .. })),
        "{late:?}"
    );
}

fn a_processing_payment_settles_later(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let held = hold(&*gateway, "held", "pm_card_ridepay_processing");
    assert_eq!(held.status, IntentStatus::Processing);
    std::thread::sleep(intents::PROCESSING_SETTLES_AFTER + Duration::from_millis(300));
    let settled = gateway.retrieve_intent(&held.id).unwrap().unwrap();
    assert_eq!(
        (settled.status, settled.amount_capturable_cents),
        (IntentStatus::RequiresCapture, 2000)
    );
}

pub(crate) fn hold(gateway: &Gateway, key: &str, payment_method: &str) -> PaymentIntent {
    gateway
        .create_intent(&intent_request(key, payment_method, CaptureMethod::Manual))
        .unwrap()
}

fn capture(
    gateway: &Gateway,
    key: &str,
    id: &str,
    cents: i64,
) -> Result<PaymentIntent, GatewayError> {
    gateway.capture_intent(&capture_request(key, id, cents))
}

fn a_hold_is_placed_then_captured_in_part(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let held = hold(&*gateway, "hold", "pm_card_visa");
    let captured = capture(&*gateway, "capture", &held.id, 1500).unwrap();

    assert_eq!(
        (
            held.status,
            held.amount_capturable_cents,
            held.amount_received_cents
        ),
        (IntentStatus::RequiresCapture, 2000, 0)
    );
    assert_eq!(held.capture_method, CaptureMethod::Manual);
    assert_eq!(held.metadata["ride_id"], "7");
    assert_eq!(
        (
            captured.status,
            captured.amount_received_cents,
            captured.amount_capturable_cents
        ),
        (IntentStatus::Succeeded, 1500, 0)
    );
    assert!(captured.latest_charge.is_some());
    // A read brings the balance transaction this capture did not ask for.
    let now = gateway.retrieve_intent(&held.id).unwrap().unwrap();
    assert!(now.balance_transaction.is_some());
    assert_eq!(
        PaymentIntent {
            balance_transaction: None,
            ..now
        },
        captured
    );
    assert_eq!(gateway.retrieve_intent("pi_missing").unwrap(), None);
}

fn automatic_capture_pays_at_once(under_test: &impl GatewayUnderTest) {
    let paid = under_test
        .healthy()
        .create_intent(&intent_request(
            "paid",
            "pm_card_visa",
            CaptureMethod::Automatic,
        ))
        .unwrap();
    assert_eq!(
        (paid.status, paid.amount_received_cents),
        (IntentStatus::Succeeded, 2000)
    );
}

fn each_declining_payment_method_declines_with_its_code(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    for (method, card_code, decline_code) in [
        (
            "pm_card_visa_chargeDeclined",
            "card_declined",
            "generic_decline",
        ),
        ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
        (
            "pm_card_chargeDeclinedInsufficientFunds",
            "card_declined",
            "insufficient_funds",
        ),
        (
            "pm_card_chargeDeclinedLostCard",
            "card_declined",
            "lost_card",
        ),
        (
            "pm_card_chargeDeclinedExpiredCard",
            "expired_card",
            "expired_card",
        ),
        (
            "pm_card_chargeDeclinedIncorrectCvc",
            "incorrect_cvc",
            "incorrect_cvc",
        ),
    ] {
        let declined =
            gateway.create_intent(&intent_request(method, method, CaptureMethod::Manual));
        assert!(
            matches!(&declined, Err(GatewayError::Declined { code, decline_code: Some(d), payment_intent: Some(id), .. })
                if code == card_code && d == decline_code && id.starts_with("pi_")),
            "{method}: {declined:?}"
        );
    }
}

/// Stripe's `resource_missing` for an id it never made, a `pm_card_` one
/// it does not document too; every card Stripe documents pays.
fn an_unknown_payment_method_is_rejected_and_holds_nothing(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    for unknown in ["pm_no_such_method", "pm_card_made_up"] {
        let rejected =
            gateway.create_intent(&intent_request(unknown, unknown, CaptureMethod::Manual));
        assert!(
            matches!(&rejected, Err(err @ GatewayError::Rejected { .. }) if err.is_unknown_payment_method()),
            "{unknown}: {rejected:?}"
        );
    }
    assert_eq!(intents_held(under_test), 0);
    for known in ["pm_card_mastercard", "pm_card_amex", "pm_card_visa_debit"] {
        let held = gateway
            .create_intent(&intent_request(known, known, CaptureMethod::Manual))
            .unwrap();
        assert_eq!(held.status, IntentStatus::RequiresCapture, "{known}");
    }
}

fn intents_held(under_test: &impl GatewayUnderTest) -> i64 {
    count(
        &mut PgConnection::establish(under_test.records_url()).unwrap(),
        "simulated_payment_intents",
    )
}

fn a_card_that_needs_authentication_asks_for_it_with_a_page_to_open(
    under_test: &impl GatewayUnderTest,
) {
    let waiting = hold(
        &*under_test.healthy(),
        "auth",
        "pm_card_authenticationRequired",
    );
    assert_eq!(waiting.status, IntentStatus::RequiresAction);
    let action = waiting.next_action.unwrap();
    assert_eq!(action.kind, "redirect_to_url");
    let page = action.url.unwrap();
    assert!(
        page.contains(&waiting.id) && page.contains(&waiting.client_secret.unwrap()),
        "{page}"
    );
    assert_eq!(
        action.return_url.as_deref(),
        Some("http://127.0.0.1:8080/payments/return")
    );
}

fn a_hold_is_raised_unless_the_card_refuses(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let raise = |key: &str, id: &str| {
        gateway.increment_intent(&IncrementIntent {
            idempotency_key: key.to_owned(),
            intent_id: id.to_owned(),
            amount_cents: 2600,
        })
    };
    let willing = hold(&*gateway, "willing", "pm_card_visa");
    let stubborn = hold(&*gateway, "stubborn", "pm_card_ridepay_incrementDeclined");

    let raised = raise("raise-willing", &willing.id).unwrap();
    let refused = raise("raise-stubborn", &stubborn.id);

    assert_eq!(
        (raised.amount_cents, raised.amount_capturable_cents),
        (2600, 2600)
    );
    assert!(
        matches!(refused, Err(GatewayError::Declined { .. })),
        "{refused:?}"
    );
    assert_eq!(
        capture(&*gateway, "capture", &willing.id, 2600)
            .unwrap()
            .amount_received_cents,
        2600
    );
}

fn a_canceled_hold_cannot_be_captured(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let held = hold(&*gateway, "hold", "pm_card_visa");
    let canceled = gateway
        .cancel_intent(&CancelIntent {
            idempotency_key: "cancel".to_owned(),
            intent_id: held.id.clone(),
            cancellation_reason: "requested_by_customer".to_owned(),
        })
        .unwrap();
    let late = capture(&*gateway, "capture", &held.id, 100);

    assert_eq!(
        (canceled.status, canceled.cancellation_reason.as_deref()),
        (IntentStatus::Canceled, Some("requested_by_customer"))
    );
    assert!(
        matches!(late, Err(GatewayError::Rejected { .. })),
        "{late:?}"
    );
}

fn the_same_intent_key_replays_and_other_parameters_are_misconfigured(
    under_test: &impl GatewayUnderTest,
) {
    let gateway = under_test.healthy();
    let first = hold(&*gateway, "same", "pm_card_visa");
    let again = hold(&*gateway, "same", "pm_card_visa");
    let other = gateway.create_intent(&CreateIntent {
        amount_cents: 999,
        ..intent_request("same", "pm_card_visa", CaptureMethod::Manual)
    });

    assert_eq!(again, first);
    assert!(again.replayed && !first.replayed);
    assert!(
        matches!(other, Err(GatewayError::Misconfigured { .. })),
        "{other:?}"
    );
    assert_eq!(intents_held(under_test), 1);
}

fn a_lost_intent_answer_is_unknown_and_a_retry_gets_the_same_intent(
    under_test: &impl GatewayUnderTest,
) {
    let lossy = under_test.gateway(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..SimulatedGatewaySettings::default()
    });
    let request = intent_request("lost", "pm_card_visa", CaptureMethod::Manual);

    let lost = lossy.create_intent(&request);
    let made = under_test.healthy().create_intent(&request).unwrap();

    assert!(
        matches!(lost, Err(GatewayError::OutcomeUnknown { .. })),
        "{lost:?}"
    );
    assert_eq!(made.status, IntentStatus::RequiresCapture);
    assert_eq!(intents_held(under_test), 1);
}

/// Each scenario as a test of its own, for one kind of gateway.
/// Intents of a customer, one of them tagged: a list finds them all at once,
/// newest first and page by page; a search finds the tagged one only once
/// its lag has passed.
fn lists_find_every_intent_at_once_and_search_only_after_its_lag(
    under_test: &impl GatewayUnderTest,
) {
    let lagging = under_test.gateway(SimulatedGatewaySettings {
        search_lag: Duration::from_secs(3600),
        ..Default::default()
    });
    let since = chrono::Utc::now() - chrono::Duration::minutes(1);
    let made: Vec<PaymentIntent> = (0..5)
        .map(|i| {
            let mut request = intent_request(
                &format!("listed {i}"),
                "pm_card_visa",
                CaptureMethod::Manual,
            );
            request.customer = Some(if i == 4 { "cus_other" } else { "cus_listed" }.to_owned());
            request.metadata.push(("tag".to_owned(), format!("t{i}")));
            lagging.create_intent(&request).unwrap()
        })
        .collect();
    let mut listed = Vec::new();
    let mut page_request = Some(ListIntents {
        limit: 2,
        ..ListIntents::since(since, Some("cus_listed".to_owned()))
    });
    let mut pages = 0;
    while let Some(request) = page_request {
        let page = lagging.list_intents(&request).unwrap();
        assert!(page.intents.len() <= 2);
        page_request = request.after(&page);
        listed.extend(page.intents);
        pages += 1;
    }
    let mut expected: Vec<&str> = made[..4].iter().map(|i| i.id.as_str()).collect();
    let mut got: Vec<&str> = listed.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(pages >= 2);
    expected.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, expected);
    let later = ListIntents::since(chrono::Utc::now() + chrono::Duration::hours(1), None);
    assert_eq!(lagging.list_intents(&later).unwrap().intents, []);

    let tagged = [("tag", "t2"), ("ride_id", "7")];
    assert_eq!(lagging.search_intents(&tagged).unwrap().intents, []);
    let found = under_test
        .healthy()
        .search_intents(&tagged)
        .unwrap()
        .intents;
    assert_eq!(found, [made[2].clone()]);
}

/// A 500 saved under a key, before acting or after: the first answer may
/// have acted, every retry gets the saved failure, and nothing is made
/// twice.
fn a_saved_500_is_answered_to_every_retry_and_acts_at_most_once(
    under_test: &impl GatewayUnderTest,
) {
    let saving = under_test.gateway(SimulatedGatewaySettings {
        saved_error_rate: 1.0,
        ..Default::default()
    });
    for i in 0..6 {
        let request = intent_request(&format!("saved {i}"), "pm_card_visa", CaptureMethod::Manual);
        let first = saving.create_intent(&request).unwrap_err();
        assert!(
            matches!(first, GatewayError::OutcomeUnknown { .. }),
            "{first:?}"
        );
        for retry in [&saving, &under_test.healthy()] {
            let again = retry.create_intent(&request).unwrap_err();
            assert!(
                matches!(again, GatewayError::SavedFailure { .. }),
                "{again:?}"
            );
        }
    }
    assert!(intents_held(under_test) <= 6);
}

/// A key the gateway forgot (Stripe, after 24 hours) is a new key: the
/// same call under it acts again. Why no call is resent after the
/// completer's deadline.
fn a_forgotten_key_acts_afresh(under_test: &impl GatewayUnderTest) {
    let forgetful = under_test.gateway(SimulatedGatewaySettings {
        forget_keys: Some(Duration::ZERO),
        ..Default::default()
    });
    let request = intent_request("forgotten", "pm_card_visa", CaptureMethod::Manual);
    let first = forgetful.create_intent(&request).unwrap();
    let second = forgetful.create_intent(&request).unwrap();
    assert_ne!(first.id, second.id);
    assert_eq!(intents_held(under_test), 2);
}

/// A hold that asks for everything ride-hailing gets, on `payment_method`.
fn ride_hailing_hold(gateway: &Gateway, key: &str, payment_method: &str) -> PaymentIntent {
    gateway
        .create_intent(&CreateIntent {
            hold: HoldRequest::RIDE_HAILING,
            off_session: false,
            ..intent_request(key, payment_method, CaptureMethod::Manual)
        })
        .unwrap()
}

/// Days from now to `at`, rounded.
fn days_until(at: Option<chrono::DateTime<chrono::Utc>>) -> i64 {
    let left = at.expect("a hold says when it lapses") - chrono::Utc::now();
    (left.num_hours() + 12) / 24
}

/// Overcapture and extended holds as the test cards say, when a hold asks:
/// `pm_card_visa` lets 20 % over the hold be captured and lasts 7 days;
/// `pm_card_ridepay_extendedHold` the same for 30 days;
/// `pm_card_ridepay_noOvercapture` nothing over the hold; a hold that asks
/// for increments only gets no overcapture. A raise moves the room with it.
fn overcapture_and_extended_holds_are_as_their_test_cards_say(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let visa = ride_hailing_hold(&*gateway, "visa", "pm_card_visa");
    let extended = ride_hailing_hold(&*gateway, "extended", "pm_card_ridepay_extendedHold");
    let plain = ride_hailing_hold(&*gateway, "plain", "pm_card_ridepay_noOvercapture");
    let unasked = hold(&*gateway, "unasked", "pm_card_visa");

    assert_eq!(
        [&visa, &extended, &plain].map(|hold| hold.amount_capturable_max_cents),
        [Some(2400), Some(2400), None]
    );
    assert_eq!(
        [&visa, &extended, &plain].map(|hold| days_until(hold.capture_before)),
        [7, 30, 7]
    );
    assert_eq!(
        under_test
            .healthy()
            .retrieve_intent(&unasked.id)
            .unwrap()
            .unwrap()
            .amount_capturable_max_cents,
        None
    );
    let over = capture(&*gateway, "over", &visa.id, 2350).unwrap();
    assert_eq!(
        (over.status, over.amount_received_cents),
        (IntentStatus::Succeeded, 2350)
    );
    for (key, intent, cents) in [("too far", &extended, 2401), ("no room", &plain, 2001)] {
        let refused = capture(&*gateway, key, &intent.id, cents).unwrap_err();
        assert!(
            matches!(refused, GatewayError::Rejected { .. }),
            "{refused:?}"
        );
    }
    let raised = gateway
        .increment_intent(&IncrementIntent {
            idempotency_key: "raise".to_owned(),
            intent_id: extended.id.clone(),
            amount_cents: 3000,
        })
        .unwrap();
    assert_eq!(raised.amount_cents, 3000);
    let now = gateway.retrieve_intent(&extended.id).unwrap().unwrap();
    assert_eq!(now.amount_capturable_max_cents, Some(3600));
}

/// Off session (a tip after the ride, on the saved card): a card that
/// pays pays at once; one that needs the rider is declined with
/// `authentication_required`, its PaymentIntent left waiting for another
/// payment method, and cancelled when asked.
fn off_session_payments_never_ask_the_rider(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let off_session = |key: &str, payment_method: &str| {
        gateway.create_intent(&CreateIntent {
            off_session: true,
            amount_cents: 300,
            customer: Some("cus_rider".to_owned()),
            ..intent_request(key, payment_method, CaptureMethod::Automatic)
        })
    };

    let paid = off_session("tip", "pm_card_visa").unwrap();
    let declined = off_session("needs the rider", "pm_card_authenticationRequired").unwrap_err();

    assert_eq!(
        (paid.status, paid.amount_received_cents),
        (IntentStatus::Succeeded, 300)
    );
    let GatewayError::Declined {
        code,
        decline_code,
        payment_intent: Some(intent_id),
        ..
    } = declined
    else {
        panic!("{declined:?}");
    };
    assert_eq!(
        (code.as_str(), decline_code.as_deref()),
        ("authentication_required", Some("authentication_required"))
    );
    let left = gateway.retrieve_intent(&intent_id).unwrap().unwrap();
    assert_eq!(left.status, IntentStatus::RequiresPaymentMethod);
    let cancelled = gateway
        .cancel_intent(&CancelIntent {
            idempotency_key: "cancel it".to_owned(),
            intent_id,
            cancellation_reason: "abandoned".to_owned(),
        })
        .unwrap();
    assert_eq!(cancelled.status, IntentStatus::Canceled);
}

/// A payment captured at once brings its charge's balance transaction when
/// the call asks for it, with the gateway's fee: Stripe's card price, 2.9 %
/// rounded half up and 30 minor units, in every currency. A replay and a
/// read bring the same one; a call that does not ask (a key of call
/// version 3) gets none, and a read of its PaymentIntent finds it.
fn a_payment_captured_at_once_brings_its_fee_when_asked(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let pay = |key: &str, cents: i64, currency: &str, asked: bool| {
        gateway
            .create_intent(&CreateIntent {
                amount_cents: cents,
                currency: currency.to_owned(),
                transfer_group: asked.then(|| format!("ridepay-{key}")),
                expand_balance_transaction: asked,
                ..intent_request(key, "pm_card_visa", CaptureMethod::Automatic)
            })
            .unwrap()
    };

    let paid = [(2000, "eur"), (1050, "usd"), (1500, "gbp")]
        .map(|(cents, currency)| (pay(&format!("{cents}"), cents, currency, true), currency));
    let again = pay("2000", 2000, "eur", true);
    let unasked = pay("unasked", 2000, "eur", false);

    let fees = paid.each_ref().map(|(intent, currency)| {
        let transaction = intent.balance_transaction.clone().expect("captured");
        assert!(transaction.id.starts_with("txn_"), "{transaction:?}");
        assert_eq!(
            (transaction.currency.as_str(), transaction.exchange_rate),
            (*currency, None)
        );
        (
            transaction.amount_cents,
            transaction.fee_cents,
            transaction.net_cents,
        )
    });
    assert_eq!(fees, [(2000, 88, 1912), (1050, 60, 990), (1500, 74, 1426)]);
    let first = &paid[0].0;
    assert_eq!(again.balance_transaction, first.balance_transaction);
    let read = |id: &str| gateway.retrieve_intent(id).unwrap().unwrap();
    assert_eq!(
        read(&first.id).balance_transaction,
        first.balance_transaction
    );
    assert_eq!(unasked.balance_transaction, None);
    assert_eq!(
        read(&unasked.id).balance_transaction.map(|t| t.fee_cents),
        Some(88)
    );
}

/// The card that settles converted: a usd charge's balance transaction is
/// in eur at 0.9 and a eur charge's in usd at 1.1, the fee on the settled
/// amount, as the answer that asks, a read and the balance's list show it;
/// a refund of one is listed in the settled currency too.
fn a_charge_settled_in_another_currency_says_so(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let pay = |key: &str, currency: &str| {
        gateway
            .create_intent(&CreateIntent {
                currency: currency.to_owned(),
                expand_balance_transaction: true,
                ..intent_request(
                    key,
                    "pm_card_ridepay_settlesConverted",
                    CaptureMethod::Automatic,
                )
            })
            .unwrap()
    };
    let settled = |intent: &PaymentIntent| {
        let transaction = intent.balance_transaction.clone().expect("captured");
        (
            transaction.currency,
            transaction.exchange_rate,
            [
                transaction.amount_cents,
                transaction.fee_cents,
                transaction.net_cents,
            ],
        )
    };
    let dollars = pay("usd", "usd");
    let euros = pay("eur", "eur");
    assert_eq!(
        settled(&dollars),
        ("eur".to_owned(), Some(0.9), [1800, 82, 1718])
    );
    assert_eq!(
        settled(&euros),
        ("usd".to_owned(), Some(1.1), [2200, 94, 2106])
    );
    let read = gateway.retrieve_intent(&euros.id).unwrap().unwrap();
    assert_eq!(read.balance_transaction, euros.balance_transaction);

    let refunded = gateway.refund(&refund("refund", &euros.id, 500)).unwrap();
    let listed = |source: &str| {
        let page = gateway
            .list_balance_transactions(&ListBalanceTransactions::of_source(source))
            .unwrap();
        page.transactions[0].transaction.clone()
    };
    assert_eq!(
        Some(listed(euros.latest_charge.as_deref().unwrap())),
        euros.balance_transaction
    );
    let refund_transaction = listed(&refunded.id);
    assert_eq!(
        (
            refund_transaction.currency.as_str(),
            refund_transaction.amount_cents,
            refund_transaction.exchange_rate
        ),
        ("usd", -550, Some(1.1))
    );
}

/// A driver's connected account: made Express with the `transfers`
/// capability requested, `inactive` until its owner is onboarded; the same
/// key gives the same account and other parameters under it are refused; a
/// read finds it and no other; a country accounts cannot be made in is
/// refused, making nothing.
fn a_connected_account_is_made_once_and_read(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let request = |key: &str, email: &str, country: &str| CreateAccount {
        idempotency_key: key.to_owned(),
        email: email.to_owned(),
        country: country.to_owned(),
        metadata: vec![("ridepay_driver".to_owned(), "drv_1".to_owned())],
    };
    let made = gateway
        .create_account(&request("driver", "driver@example.com", "US"))
        .unwrap();
    assert!(made.id.starts_with("acct_"), "{made:?}");
    assert_eq!(
        (made.transfers, made.details_submitted, made.can_be_paid()),
        (Some(CapabilityStatus::Inactive), false, false)
    );
    assert_eq!(made.email.as_deref(), Some("driver@example.com"));
    assert_eq!(made.metadata["ridepay_driver"], "drv_1");
    let again = gateway
        .create_account(&request("driver", "driver@example.com", "US"))
        .unwrap();
    assert_eq!(again, made);
    assert!(matches!(
        gateway.create_account(&request("driver", "other@example.com", "US")),
        Err(GatewayError::Misconfigured { .. })
    ));
    assert_eq!(gateway.retrieve_account(&made.id).unwrap(), Some(made));
    assert_eq!(gateway.retrieve_account("acct_none").unwrap(), None);
    assert!(matches!(
        gateway.create_account(&request("abroad", "driver@example.com", "ZZ")),
        Err(GatewayError::Rejected { .. })
    ));
    assert_eq!(count(&mut under_test.records(), "simulated_accounts"), 1);
}

/// The gateway's accounts listed newest first, page by page, since a time:
/// a list, which proves whether an account was made.
fn accounts_are_listed_newest_first_page_by_page(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let before = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
    let made: Vec<String> = (0..3)
        .map(|n| {
            gateway
                .create_account(&CreateAccount {
                    idempotency_key: format!("listed {n}"),
                    email: format!("driver{n}@example.com"),
                    country: "US".to_owned(),
                    metadata: vec![("ridepay_key".to_owned(), format!("key {n}"))],
                })
                .unwrap()
                .id
        })
        .collect();
    let mut listing = Some(ListAccounts {
        limit: 2,
        ..ListAccounts::since(before)
    });
    let mut listed = Vec::new();
    while let Some(list) = listing {
        let page = gateway.list_accounts(&list).unwrap();
        assert!(page.accounts.len() <= 2);
        listed.extend(page.accounts.iter().map(|account| account.id.clone()));
        listing = list.after(&page);
    }
    let mut expected = made.clone();
    expected.sort();
    let mut found = listed.clone();
    found.sort();
    assert_eq!(found, expected);
    let later = gateway
        .list_accounts(&ListAccounts::since(
            chrono::Utc::now() + chrono::TimeDelta::hours(1),
        ))
        .unwrap();
    assert!(later.accounts.is_empty() && !later.has_more);
}

/// An onboarding link for an account of the gateway: a page of its own,
/// good for a few minutes; the same key gives the same link; no link for
/// an account it does not hold, or with a page that is not a web URL.
fn an_onboarding_link_is_made_for_an_account_of_the_gateway(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let account = gateway
        .create_account(&CreateAccount {
            idempotency_key: "driver".to_owned(),
            email: "driver@example.com".to_owned(),
            country: "US".to_owned(),
            metadata: Vec::new(),
        })
        .unwrap();
    let link = |key: &str, account: &str, return_url: &str| {
        gateway.create_account_link(&CreateAccountLink {
            idempotency_key: key.to_owned(),
            account: account.to_owned(),
            refresh_url: "http://127.0.0.1:8080/drivers/onboarding/t/refresh".to_owned(),
            return_url: return_url.to_owned(),
        })
    };
    let back = "http://127.0.0.1:8080/drivers/onboarding/t/return";
    let made = link("link", &account.id, back).unwrap();
    assert!(made.url.contains("/onboard?link="), "{made:?}");
    let lasts = made.expires_at - chrono::Utc::now();
    assert!(
        lasts > chrono::Duration::minutes(3) && lasts <= chrono::Duration::minutes(5),
        "{lasts}"
    );
    assert_eq!(link("link", &account.id, back).unwrap(), made);
    assert!(matches!(
        link("nobody", "acct_none", back),
        Err(GatewayError::Rejected { .. })
    ));
    assert!(matches!(
        link("javascript", &account.id, "javascript:alert(1)"),
        Err(GatewayError::Rejected { .. })
    ));
}

pub(crate) fn made_account(gateway: &Gateway) -> Account {
    gateway
        .create_account(&CreateAccount {
            idempotency_key: "driver".to_owned(),
            email: "driver@example.com".to_owned(),
            country: "US".to_owned(),
            metadata: Vec::new(),
        })
        .unwrap()
}

/// The `account.updated` events of account `id` the double recorded.
fn account_updates(under_test: &impl GatewayUnderTest, id: &str) -> i64 {
    count(
        &mut under_test.records(),
        &format!(
            "simulated_events WHERE object_kind = 'account' AND event_type = 'account.updated' \
             AND object_id = '{id}' AND gateway = '{}'",
            under_test.double().as_str()
        ),
    )
}

/// The test controls do what Stripe does to an account on its own: restrict
/// it (requirements past due) and activate it again, what the gateway then
/// reads, each change announced once to the double that holds the account;
/// an account no double holds is `resource_missing`.
fn an_account_is_restricted_and_activated_with_its_updates_announced(
    under_test: &impl GatewayUnderTest,
) {
    let gateway = under_test.healthy();
    let account = made_account(gateway.as_ref());
    let mut records = under_test.records();

    let activated = accounts::activate(&mut records, &account.id).unwrap();
    let read_active = gateway.retrieve_account(&account.id).unwrap().unwrap();
    accounts::activate(&mut records, &account.id).unwrap();
    let updates_once_active = account_updates(under_test, &account.id);
    let restricted = accounts::restrict(&mut records, &account.id).unwrap();
    let read_restricted = gateway.retrieve_account(&account.id).unwrap().unwrap();

    assert_eq!(activated, read_active);
    assert!(read_active.can_be_paid(), "{read_active:?}");
    assert_eq!(updates_once_active, 1);
    assert_eq!(restricted, read_restricted);
    assert_eq!(read_restricted.transfers, Some(CapabilityStatus::Inactive));
    assert!(!read_restricted.can_be_paid());
    assert_eq!(account_updates(under_test, &account.id), 2);
    let missing = accounts::restrict(&mut records, "acct_none");
    assert!(
        matches!(&missing, Err(GatewayError::Rejected { message }) if message.starts_with("resource_missing")),
        "{missing:?}"
    );
}

/// Onboarding completed activates the account and announces it; left
/// incomplete, it changes nothing and announces nothing.
fn an_onboarding_completed_is_announced(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let account = made_account(gateway.as_ref());
    let link = |key: &str| {
        let made = gateway
            .create_account_link(&CreateAccountLink {
                idempotency_key: key.to_owned(),
                account: account.id.clone(),
                refresh_url: "http://127.0.0.1:8080/drivers/onboarding/t/refresh".to_owned(),
                return_url: "http://127.0.0.1:8080/drivers/onboarding/t/return".to_owned(),
            })
            .unwrap();
        made.url.split("link=").nth(1).unwrap().to_owned()
    };
    let mut records = under_test.records();

    accounts::onboard(
        &mut records,
        &link("later"),
        under_test.double(),
        Onboarded::Incomplete,
    )
    .unwrap();
    let updates_after_leaving = account_updates(under_test, &account.id);
    accounts::onboard(
        &mut records,
        &link("done"),
        under_test.double(),
        Onboarded::Complete,
    )
    .unwrap();

    assert_eq!(updates_after_leaving, 0);
    assert_eq!(account_updates(under_test, &account.id), 1);
    let onboarded = gateway.retrieve_account(&account.id).unwrap().unwrap();
    assert!(onboarded.can_be_paid() && onboarded.details_submitted);
}

/// A hold's charge is not captured: asking brings no balance transaction.
/// Its capture, asking, brings one with the fee on what it captured, which
/// a read then finds too; a capture that does not ask gets none.
fn a_hold_brings_no_fee_until_its_capture_does(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let asking = |key: &str| {
        gateway
            .create_intent(&CreateIntent {
                transfer_group: Some(format!("ridepay-{key}")),
                expand_balance_transaction: true,
                ..intent_request(key, "pm_card_visa", CaptureMethod::Manual)
            })
            .unwrap()
    };
    let held = asking("hold");
    let unasked = asking("unasked");
    let read = |id: &str| gateway.retrieve_intent(id).unwrap().unwrap();

    assert_eq!(
        (
            held.status,
            held.balance_transaction.clone(),
            read(&held.id).balance_transaction
        ),
        (IntentStatus::RequiresCapture, None, None)
    );
    let captured = gateway
        .capture_intent(&CaptureIntent {
            expand_balance_transaction: true,
            ..capture_request("capture", &held.id, 1500)
        })
        .unwrap();
    let plain = capture(&*gateway, "plain", &unasked.id, 2000).unwrap();

    let transaction = captured.balance_transaction.clone().expect("captured");
    assert_eq!(
        (
            transaction.amount_cents,
            transaction.fee_cents,
            transaction.net_cents
        ),
        (1500, 74, 1426)
    );
    assert_eq!(read(&held.id).balance_transaction, Some(transaction));
    assert_eq!(plain.balance_transaction, None);
}

/// The balance's list: each captured charge's balance transaction (the
/// one its capture brings) and each refund's that moved money (negative,
/// no fee), newest first, page by page, from `created[gte]` on.
fn the_balance_lists_each_capture_and_each_refund_newest_first(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let paid = paid(&*gateway, "paid", "pm_card_visa");
    let held = hold(&*gateway, "hold", "pm_card_visa");
    let captured = capture(&*gateway, "capture", &held.id, 1500).unwrap();
    let refunded = gateway.refund(&refund("refund", &paid.id, 500)).unwrap();
    let list =
        |request: &ListBalanceTransactions| gateway.list_balance_transactions(request).unwrap();

    let first = ListBalanceTransactions {
        limit: 2,
        ..ListBalanceTransactions::since(None)
    };
    let page = list(&first);
    let next = list(&first.after(&page).expect("a page follows"));
    let later = list(&ListBalanceTransactions::since(Some(
        chrono::Utc::now() + chrono::Duration::hours(1),
    )));

    let listed: Vec<_> = page
        .transactions
        .iter()
        .chain(&next.transactions)
        .map(|listed| {
            let transaction = &listed.transaction;
            (
                listed.kind.as_str(),
                listed.source.clone(),
                [
                    transaction.amount_cents,
                    transaction.fee_cents,
                    transaction.net_cents,
                ],
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("refund", Some(refunded.id), [-500, 0, -500]),
            ("charge", captured.latest_charge, [1500, 74, 1426]),
            ("charge", paid.latest_charge.clone(), [2000, 88, 1912]),
        ]
    );
    assert_eq!((page.has_more, next.has_more), (true, false));
    let read = gateway.retrieve_intent(&paid.id).unwrap().unwrap();
    assert_eq!(
        Some(&next.transactions[0].transaction),
        read.balance_transaction.as_ref()
    );
    assert_eq!(later, BalanceTransactionPage::default());
    // One charge's, or one refund's, alone.
    let of_source = |source: &str| {
        let page = list(&ListBalanceTransactions::of_source(source));
        let kinds: Vec<_> = page.transactions.iter().map(|l| l.kind.clone()).collect();
        (kinds, page.transactions[0].transaction.amount_cents)
    };
    assert_eq!(
        of_source(paid.latest_charge.as_deref().unwrap()),
        (vec!["charge".to_owned()], 2000)
    );
    assert_eq!(
        of_source(&listed[0].1.clone().unwrap()),
        (vec!["refund".to_owned()], -500)
    );
}

macro_rules! gateway_contract {
    ($kind:ident, $under_test:ident: $($scenario:ident),+ $(,)?) => {
        mod $kind {
            use super::*;
            $(
                #[test]
                fn $scenario() {
                    super::$scenario(&$under_test {
                        records_url: $crate::common::test_databases::create_test_database(),
                    });
                }
            )+
        }
    };
}
pub(crate) use gateway_contract;

/// The whole suite, for one kind of gateway.
macro_rules! every_scenario {
    ($kind:ident, $under_test:ident) => {
        gateway_contract!(
            $kind, $under_test:
            a_failure_before_acting_is_unavailable_and_holds_nothing,
            partial_refunds_add_up_and_never_exceed_what_was_paid,
            the_same_refund_key_gives_the_same_refund_and_other_parameters_are_refused,
            refunds_of_unknown_or_unpaid_intents_are_rejected,
            a_lost_refund_response_is_unknown_and_a_retry_gets_the_same_refund,
            refunds_that_settle_later_do_as_their_test_cards_say,
            refunds_of_charges_made_before_payment_intents_are_made_on_the_charge,
            a_disputed_payment_says_so,
            a_hold_lapses_and_is_canceled_automatically,
            a_processing_payment_settles_later,
            a_hold_is_placed_then_captured_in_part,
            automatic_capture_pays_at_once,
            each_declining_payment_method_declines_with_its_code,
            an_unknown_payment_method_is_rejected_and_holds_nothing,
            a_card_that_needs_authentication_asks_for_it_with_a_page_to_open,
            a_hold_is_raised_unless_the_card_refuses,
            a_canceled_hold_cannot_be_captured,
            the_same_intent_key_replays_and_other_parameters_are_misconfigured,
            a_lost_intent_answer_is_unknown_and_a_retry_gets_the_same_intent,
            lists_find_every_intent_at_once_and_search_only_after_its_lag,
            a_saved_500_is_answered_to_every_retry_and_acts_at_most_once,
            a_forgotten_key_acts_afresh,
            overcapture_and_extended_holds_are_as_their_test_cards_say,
            off_session_payments_never_ask_the_rider,
            a_payment_captured_at_once_brings_its_fee_when_asked,
            a_hold_brings_no_fee_until_its_capture_does,
            a_charge_settled_in_another_currency_says_so,
            a_connected_account_is_made_once_and_read,
            accounts_are_listed_newest_first_page_by_page,
            an_onboarding_link_is_made_for_an_account_of_the_gateway,
            an_account_is_restricted_and_activated_with_its_updates_announced,
            an_onboarding_completed_is_announced,
            the_balance_lists_each_capture_and_each_refund_newest_first,
        );
    };
}

every_scenario!(simulated, Simulated);
every_scenario!(stripe_over_http, StripeOverHttp);
