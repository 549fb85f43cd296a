//! One behavioural suite, run against every gateway: the in-process simulated
//! gateway, and the Stripe client talking HTTP to the fake gateway on
//! loopback. Both must answer each scenario the same way.

use diesel::{Connection, PgConnection};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::doubles::{store, SimulatedGateway};
use ridepay::payments::{
    CancelIntent, CaptureMethod, ChargeRequest, CreateIntent, GatewayError, IncrementIntent,
    IntentGateway, IntentStatus, PaymentGateway, PaymentIntent, RefundRequest, StripeGateway,
};

use crate::helpers::{
    capture_request, count, create_test_database, intent_request, ledger_count, start_fake_gateway,
    stripe_settings,
};

/// A gateway with both APIs: the Charges one of rides made before
/// PaymentIntents, and PaymentIntents.
trait Gateway: PaymentGateway + IntentGateway {}

impl<G: PaymentGateway + IntentGateway> Gateway for G {}

/// Gateways over one ledger, each with its own faults.
trait GatewayUnderTest {
    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<dyn Gateway>;
    fn ledger_url(&self) -> &str;

    fn healthy(&self) -> Box<dyn Gateway> {
        self.gateway(SimulatedGatewaySettings::default())
    }

    fn charges(&self) -> i64 {
        ledger_count(self.ledger_url(), "")
    }
}

struct Simulated {
    ledger_url: String,
}

impl GatewayUnderTest for Simulated {
    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<dyn Gateway> {
        let settings = ridepay::config::Settings::for_database(&self.ledger_url);
        let pool = ridepay::db::build_pool(&self.ledger_url, &settings);
        Box::new(SimulatedGateway::new(pool, faults))
    }

    fn ledger_url(&self) -> &str {
        &self.ledger_url
    }
}

/// A fake gateway per set of faults, all on the same ledger, as several
/// Stripe servers behind one API would be.
struct StripeOverHttp {
    ledger_url: String,
}

impl GatewayUnderTest for StripeOverHttp {
    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<dyn Gateway> {
        let fake = start_fake_gateway(&self.ledger_url, faults);
        Box::new(StripeGateway::new(&stripe_settings(&fake)).unwrap())
    }

    fn ledger_url(&self) -> &str {
        &self.ledger_url
    }
}

fn request(key: &str, source: &str) -> ChargeRequest {
    ChargeRequest {
        idempotency_key: key.to_owned(),
        amount_cents: 2000,
        currency: "usd".to_owned(),
        source: source.to_owned(),
        description: "ridepay ride 1".to_owned(),
        metadata: vec![
            ("ride_id".to_owned(), "1".to_owned()),
            ("idempotency_key_id".to_owned(), "1".to_owned()),
        ],
    }
}

fn a_charge_succeeds(under_test: &impl GatewayUnderTest) {
    for source in ["tok_visa", "cus_test"] {
        let charge = under_test
            .healthy()
            .charge(&request(source, source))
            .unwrap();
        assert_eq!(
            (charge.amount_cents, charge.currency.as_str()),
            (2000, "usd")
        );
    }
    assert_eq!(under_test.charges(), 2);
}

fn the_same_key_gives_the_same_charge(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let first = gateway.charge(&request("replayed", "tok_visa")).unwrap();
    let again = gateway.charge(&request("replayed", "tok_visa")).unwrap();
    assert_eq!(first, again);
    assert_eq!(under_test.charges(), 1);
}

fn the_same_key_with_other_parameters_is_misconfigured(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    gateway.charge(&request("reused", "tok_visa")).unwrap();
    let mut other = request("reused", "tok_visa");
    other.amount_cents = 2500;
    let refused = gateway.charge(&other).unwrap_err();
    assert!(
        matches!(&refused, GatewayError::Misconfigured { reason } if reason.contains("idempotency_error")),
        "{refused:?}"
    );
    assert_eq!(under_test.charges(), 1);
}

fn each_test_decline_is_a_decline_with_its_code(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    for (source, decline_code) in [
        ("tok_chargeDeclined", "generic_decline"),
        ("tok_chargeDeclinedInsufficientFunds", "insufficient_funds"),
    ] {
        let declined = gateway.charge(&request(source, source)).unwrap_err();
        assert_eq!(
            declined,
            GatewayError::Declined {
                code: "card_declined".to_owned(),
                decline_code: Some(decline_code.to_owned()),
                message: "Your card was declined.".to_owned(),
                payment_intent: None,
            }
        );
        // Recorded, so the same key declines again.
        assert_eq!(
            gateway.charge(&request(source, source)).unwrap_err(),
            declined
        );
    }
    assert_eq!(
        ledger_count(under_test.ledger_url(), "WHERE status = 'failed'"),
        2
    );
}

fn an_unknown_source_is_rejected_and_charges_nothing(under_test: &impl GatewayUnderTest) {
    let rejected = under_test
        .healthy()
        .charge(&request("unknown", "src_not_a_token"))
        .unwrap_err();
    assert!(
        matches!(&rejected, GatewayError::Rejected { message } if message.contains("No such token")),
        "{rejected:?}"
    );
    assert_eq!(under_test.charges(), 0);
}

fn a_failure_before_charging_is_unavailable_and_charges_nothing(
    under_test: &impl GatewayUnderTest,
) {
    let failing = under_test.gateway(SimulatedGatewaySettings {
        fail_rate: 1.0,
        ..Default::default()
    });
    let failed = failing.charge(&request("failing", "tok_visa")).unwrap_err();
    // Over HTTP a 500 says nothing about whether it charged: the client may
    // only assume the worst; the simulated gateway knows.
    assert!(
        matches!(
            failed,
            GatewayError::Unavailable { .. } | GatewayError::OutcomeUnknown { .. }
        ),
        "{failed:?}"
    );
    assert_eq!(under_test.charges(), 0);
    let retried = under_test.healthy().charge(&request("failing", "tok_visa"));
    assert!(retried.is_ok(), "{retried:?}");
    assert_eq!(under_test.charges(), 1);
}

fn a_lost_response_is_unknown_and_a_retry_gets_the_same_charge(under_test: &impl GatewayUnderTest) {
    let lossy = under_test.gateway(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..Default::default()
    });
    let lost = lossy.charge(&request("lost", "tok_visa")).unwrap_err();
    assert!(
        matches!(lost, GatewayError::OutcomeUnknown { .. }),
        "{lost:?}"
    );
    // It did charge.
    assert_eq!(under_test.charges(), 1);

    let retried = under_test
        .healthy()
        .charge(&request("lost", "tok_visa"))
        .unwrap();

    assert_eq!(under_test.charges(), 1);
    assert_eq!(
        ledger_count(
            under_test.ledger_url(),
            &format!("WHERE id = '{}' AND status = 'succeeded'", retried.id)
        ),
        1
    );
}

fn refund(key: &str, charge_id: &str, amount: Option<i64>) -> RefundRequest {
    RefundRequest {
        idempotency_key: key.to_owned(),
        charge_id: charge_id.to_owned(),
        amount_cents: amount,
        reason: Some("requested_by_customer".to_owned()),
        metadata: vec![("refund_id".to_owned(), "1".to_owned())],
    }
}

fn refunds(under_test: &impl GatewayUnderTest) -> i64 {
    count(
        &mut PgConnection::establish(under_test.ledger_url()).unwrap(),
        "simulated_refunds",
    )
}

fn partial_refunds_add_up_and_never_exceed_the_charge(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let charge = gateway.charge(&request("paid", "tok_visa")).unwrap();

    let part = gateway
        .refund(&refund("r1", &charge.id, Some(500)))
        .unwrap();
    let rest = gateway.refund(&refund("r2", &charge.id, None)).unwrap();
    let beyond = gateway
        .refund(&refund("r3", &charge.id, Some(1)))
        .unwrap_err();

    assert_eq!((part.amount_cents, rest.amount_cents), (500, 1500));
    assert_eq!(
        (part.charge_id.as_str(), part.currency.as_str()),
        (charge.id.as_str(), "usd")
    );
    assert!(
        matches!(beyond, GatewayError::Rejected { .. }),
        "{beyond:?}"
    );
    let state = gateway.retrieve_charge(&charge.id).unwrap().unwrap();
    assert_eq!(state.amount_refunded_cents, 2000);
    assert_eq!(state.refunds.len(), 2);
    assert_eq!(
        state.refunds[0]
            .metadata
            .get("refund_id")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(state.metadata.get("ride_id").map(String::as_str), Some("1"));
    assert!(state.succeeded && !state.disputed);
    assert_eq!(refunds(under_test), 2);
}

fn the_same_refund_key_gives_the_same_refund_and_other_parameters_are_refused(
    under_test: &impl GatewayUnderTest,
) {
    let gateway = under_test.healthy();
    let charge = gateway.charge(&request("paid", "tok_visa")).unwrap();

    let first = gateway
        .refund(&refund("once", &charge.id, Some(700)))
        .unwrap();
    let again = gateway
        .refund(&refund("once", &charge.id, Some(700)))
        .unwrap();
    let other = gateway
        .refund(&refund("once", &charge.id, Some(800)))
        .unwrap_err();

    assert_eq!(first, again);
    assert!(
        matches!(other, GatewayError::Misconfigured { .. }),
        "{other:?}"
    );
    assert_eq!(refunds(under_test), 1);
}

fn refunds_of_unknown_or_failed_charges_are_rejected(under_test: &impl GatewayUnderTest) {
    use diesel::prelude::*;
    use ridepay::schema::simulated_charges;
    let gateway = under_test.healthy();
    gateway
        .charge(&request("declined", "tok_chargeDeclined"))
        .unwrap_err();
    let declined: String = simulated_charges::table
        .select(simulated_charges::id)
        .first(&mut PgConnection::establish(under_test.ledger_url()).unwrap())
        .unwrap();

    for charge_id in [declined.as_str(), "ch_nope"] {
        let refused = gateway
            .refund(&refund(charge_id, charge_id, None))
            .unwrap_err();
        assert!(
            matches!(refused, GatewayError::Rejected { .. }),
            "{refused:?}"
        );
    }
    assert_eq!(gateway.retrieve_charge("ch_nope").unwrap(), None);
    assert!(
        !gateway
            .retrieve_charge(&declined)
            .unwrap()
            .unwrap()
            .succeeded
    );
    assert_eq!(refunds(under_test), 0);
}

fn a_lost_refund_response_is_unknown_and_a_retry_gets_the_same_refund(
    under_test: &impl GatewayUnderTest,
) {
    let charge = under_test
        .healthy()
        .charge(&request("paid", "tok_visa"))
        .unwrap();
    let lossy = under_test.gateway(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..Default::default()
    });

    let lost = lossy
        .refund(&refund("lost", &charge.id, Some(300)))
        .unwrap_err();
    let retried = under_test
        .healthy()
        .refund(&refund("lost", &charge.id, Some(300)))
        .unwrap();

    assert!(
        matches!(lost, GatewayError::OutcomeUnknown { .. }),
        "{lost:?}"
    );
    assert_eq!(retried.amount_cents, 300);
    assert_eq!(refunds(under_test), 1);
}

fn a_disputed_charge_says_so(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let charge = gateway.charge(&request("paid", "tok_visa")).unwrap();
    store::open_dispute(
        &mut PgConnection::establish(under_test.ledger_url()).unwrap(),
        &charge.id,
    )
    .unwrap();
    assert!(
        gateway
            .retrieve_charge(&charge.id)
            .unwrap()
            .unwrap()
            .disputed
    );
}

fn hold(gateway: &dyn Gateway, key: &str, payment_method: &str) -> PaymentIntent {
    gateway
        .create_intent(&intent_request(key, payment_method, CaptureMethod::Manual))
        .unwrap()
}

fn capture(
    gateway: &dyn Gateway,
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
    assert_eq!(gateway.retrieve_intent(&held.id).unwrap(), Some(captured));
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
    for (method, decline_code) in [
        ("pm_card_visa_chargeDeclined", "generic_decline"),
        (
            "pm_card_chargeDeclinedInsufficientFunds",
            "insufficient_funds",
        ),
    ] {
        let declined =
            gateway.create_intent(&intent_request(method, method, CaptureMethod::Manual));
        assert!(
            matches!(&declined, Err(GatewayError::Declined { code, decline_code: Some(d), payment_intent: Some(id), .. })
                if code == "card_declined" && d == decline_code && id.starts_with("pi_")),
            "{method}: {declined:?}"
        );
    }
}

fn an_unknown_payment_method_is_rejected_and_holds_nothing(under_test: &impl GatewayUnderTest) {
    let rejected = under_test.healthy().create_intent(&intent_request(
        "unknown",
        "pm_no_such_method",
        CaptureMethod::Manual,
    ));
    assert!(
        matches!(rejected, Err(GatewayError::Rejected { .. })),
        "{rejected:?}"
    );
    assert_eq!(intents_held(under_test), 0);
}

fn intents_held(under_test: &impl GatewayUnderTest) -> i64 {
    count(
        &mut PgConnection::establish(under_test.ledger_url()).unwrap(),
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
macro_rules! gateway_contract {
    ($kind:ident, $under_test:ident: $($scenario:ident),+ $(,)?) => {
        mod $kind {
            use super::*;
            $(
                #[test]
                fn $scenario() {
                    super::$scenario(&$under_test {
                        ledger_url: create_test_database(),
                    });
                }
            )+
        }
    };
}

/// The whole suite, for one kind of gateway.
macro_rules! every_scenario {
    ($kind:ident, $under_test:ident) => {
        gateway_contract!(
            $kind, $under_test:
            a_charge_succeeds,
            the_same_key_gives_the_same_charge,
            the_same_key_with_other_parameters_is_misconfigured,
            each_test_decline_is_a_decline_with_its_code,
            an_unknown_source_is_rejected_and_charges_nothing,
            a_failure_before_charging_is_unavailable_and_charges_nothing,
            a_lost_response_is_unknown_and_a_retry_gets_the_same_charge,
            partial_refunds_add_up_and_never_exceed_the_charge,
            the_same_refund_key_gives_the_same_refund_and_other_parameters_are_refused,
            refunds_of_unknown_or_failed_charges_are_rejected,
            a_lost_refund_response_is_unknown_and_a_retry_gets_the_same_refund,
            a_disputed_charge_says_so,
            a_hold_is_placed_then_captured_in_part,
            automatic_capture_pays_at_once,
            each_declining_payment_method_declines_with_its_code,
            an_unknown_payment_method_is_rejected_and_holds_nothing,
            a_card_that_needs_authentication_asks_for_it_with_a_page_to_open,
            a_hold_is_raised_unless_the_card_refuses,
            a_canceled_hold_cannot_be_captured,
            the_same_intent_key_replays_and_other_parameters_are_misconfigured,
            a_lost_intent_answer_is_unknown_and_a_retry_gets_the_same_intent,
        );
    };
}

every_scenario!(simulated, Simulated);
every_scenario!(stripe_over_http, StripeOverHttp);
