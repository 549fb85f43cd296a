//! One behavioural suite, run against every gateway: the in-process simulated
//! gateway, and the Stripe client talking HTTP to the fake gateway on
//! loopback. Both must answer each scenario the same way.

use diesel::{Connection, PgConnection};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::doubles::{store, SimulatedGateway};
use ridepay::payments::{
    ChargeRequest, GatewayError, PaymentGateway, RefundRequest, StripeGateway,
};

use crate::helpers::{
    count, create_test_database, ledger_count, start_fake_gateway, stripe_settings,
};

/// Gateways over one ledger, each with its own faults.
trait GatewayUnderTest {
    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<dyn PaymentGateway>;
    fn ledger_url(&self) -> &str;

    fn healthy(&self) -> Box<dyn PaymentGateway> {
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
    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<dyn PaymentGateway> {
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
    fn gateway(&self, faults: SimulatedGatewaySettings) -> Box<dyn PaymentGateway> {
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
        );
    };
}

every_scenario!(simulated, Simulated);
every_scenario!(stripe_over_http, StripeOverHttp);
