//! The Stripe client against the fake gateway over loopback: the answers
//! that only HTTP has (rate limits, a key in use, a refused API key,
//! timeouts, a closed port).

use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use ridepay::config::StripeSettings;
use ridepay::payments::{
    CaptureMethod, CreateIntent, GatewayError, PaymentGateway, PaymentIntent, StripeGateway,
};

use crate::common::gateway::{
    intent_request, records_count, spawn_fake_gateway, stripe_settings, FAKE_API_KEY,
};

fn request(key: &str) -> CreateIntent {
    intent_request(key, "pm_card_visa", CaptureMethod::Automatic)
}

/// One payment by a client made for it.
fn pay_once(settings: &StripeSettings, key: &str) -> Result<PaymentIntent, GatewayError> {
    StripeGateway::new(settings)
        .unwrap()
        .create_intent(&request(key))
}

#[test]
fn a_rate_limit_is_unavailable_with_the_retry_after_of_the_answer() {
    let (fake, records) = spawn_fake_gateway(|faults| faults.rate_limit_rate = 1.0);
    let client = StripeGateway::new(&stripe_settings(&fake)).unwrap();

    let limited = client.create_intent(&request("limited")).unwrap_err();

    assert!(
        matches!(
            limited,
            GatewayError::Unavailable { retry_after: Some(after), .. } if after == Duration::from_secs(1)
        ),
        "{limited:?}"
    );
    assert_eq!(records_count(&records, ""), 0);
}

#[test]
fn a_key_in_use_by_a_slower_request_is_unavailable_and_pays_once() {
    let (slow, records) = spawn_fake_gateway(|faults| faults.latency = Duration::from_millis(1500));
    let client = StripeGateway::new(&stripe_settings(&slow)).unwrap();

    let (first, second) = thread::scope(|scope| {
        let first = scope.spawn(|| client.create_intent(&request("busy")));
        thread::sleep(Duration::from_millis(300));
        let second = client.create_intent(&request("busy"));
        (first.join().unwrap(), second)
    });

    assert!(first.is_ok(), "{first:?}");
    assert!(
        matches!(&second, Err(GatewayError::Unavailable { reason, retry_after: Some(_) }) if reason.contains("409")),
        "{second:?}"
    );
    assert_eq!(records_count(&records, ""), 1);
}

#[test]
fn a_refused_api_key_is_misconfigured_and_never_shown() {
    let (fake, records) = spawn_fake_gateway(|_| {});
    let mut settings = stripe_settings(&fake);
    settings.api_key = Some("sk_test_WrongKey999".to_owned().into());
    let client = StripeGateway::new(&settings).unwrap();

    let refused = client.create_intent(&request("bad-key")).unwrap_err();

    assert!(
        matches!(&refused, GatewayError::Misconfigured { reason } if reason.contains("401")),
        "{refused:?}"
    );
    let shown = format!("{refused:?} {refused} {client:?}");
    assert!(
        !shown.contains("WrongKey999") && !shown.contains(FAKE_API_KEY),
        "{shown}"
    );
    assert_eq!(records_count(&records, ""), 0);
}

#[test]
fn a_timeout_shorter_than_the_gateway_is_unknown_and_a_retry_gets_the_payment_made() {
    let (slow, records) = spawn_fake_gateway(|faults| faults.latency = Duration::from_millis(800));
    let mut impatient = stripe_settings(&slow);
    impatient.timeout = Duration::from_millis(200);

    let timed_out = pay_once(&impatient, "slow").unwrap_err();

    assert!(
        matches!(timed_out, GatewayError::OutcomeUnknown { .. }),
        "{timed_out:?}"
    );
    // The gateway goes on and pays; the patient retry, once the first
    // request is done, gets that payment.
    let patient = StripeGateway::new(&stripe_settings(&slow)).unwrap();
    let paid = loop {
        match patient.create_intent(&request("slow")) {
            Err(GatewayError::Unavailable { .. }) => thread::sleep(Duration::from_millis(200)),
            other => break other.unwrap(),
        }
    };
    assert_eq!(
        records_count(&records, &format!("WHERE id = '{}'", paid.id)),
        1
    );
    assert_eq!(records_count(&records, ""), 1);
}

#[test]
fn a_closed_port_is_unavailable() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let settings = StripeSettings {
        api_key: Some(FAKE_API_KEY.to_owned().into()),
        api_base: format!("http://{closed}"),
        ..StripeSettings::default()
    };

    let refused = pay_once(&settings, "nobody-home").unwrap_err();

    assert!(
        matches!(refused, GatewayError::Unavailable { .. }),
        "{refused:?}"
    );
}

#[test]
fn a_500_stripe_saved_under_the_key_is_known_as_such_and_each_failure_names_its_request() {
    let (fake, records) = spawn_fake_gateway(|faults| faults.saved_error_rate = 1.0);
    let client = StripeGateway::new(&stripe_settings(&fake)).unwrap();
    let hold = intent_request("saved", "pm_card_visa", CaptureMethod::Manual);

    let first = client.create_intent(&hold).unwrap_err();
    let retried = client.create_intent(&hold).unwrap_err();

    // The first 500 may have acted, for all the client knows; its retry is
    // answered from what Stripe saved, so no retry can learn more: that is
    // reconciliation's to find out.
    assert!(
        matches!(&first, GatewayError::OutcomeUnknown { reason } if reason.contains("Stripe request req_")),
        "{first:?}"
    );
    assert!(
        matches!(&retried, GatewayError::SavedFailure { reason }
            if reason.contains("saved under this key") && reason.contains("Stripe request req_")),
        "{retried:?}"
    );
    // Before or after acting, the fake chose; never twice.
    assert!(records_count(&records, "") <= 1);
}
