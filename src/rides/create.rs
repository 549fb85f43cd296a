//! `POST /api/rides` on the idempotency flow: the ride, pending, with its
//! audit record (Started); the PaymentIntent, created and confirmed under a
//! key derived from the key row (RideCreated, holding no connection); what
//! the gateway answered, recorded on the ride (ChargeCompleted); the answer
//! stored. A retry, or the completer, resumes from the recovery point the
//! key reached.

use diesel::PgConnection;
use serde::{Deserialize, Serialize};

use crate::context::ServiceContext;
use crate::idempotency::{
    CallOf, Called, CanonicalRequest, Endpoint, Finishing, FoundOf, Lease, StoredResponse,
    Transition, TransitionOf,
};
use crate::payments::{
    self, call_metadata, gateway_key, lookup, CaptureMethod, CreateIntent, Final, GatewayError,
    PaymentGateway, PaymentIntent,
};
use crate::rides::model::{
    self, NewRide, Ride, RideStatus, Settlement, CURRENCIES, MAX_AMOUNT_CENTS, MIN_AMOUNT_CENTS,
};
use crate::rides::transitions::{may_follow, settlement};
use crate::rides::unpaid;
use crate::service_error::ServiceError;
use crate::users::{self, Role};
use crate::validation::{is_payment_method_id, parse_body, FieldError};
use crate::wire;
use crate::wire::ride::RideBody;

crate::recovery_points! {
    /// How far a ride request has got. A retry (or the completer) resumes here.
    pub enum RecoveryPoint for "rides.create" {
        /// The ride exists, pending; the PaymentIntent may or may not have
        /// been made (the call keeps its Rocket Rides name, `charge`).
        RideCreated = "ride_created", call "charge";
        /// The gateway's answer is recorded on the ride; the response is not
        /// stored yet.
        ChargeCompleted = "charge_completed", atomic;
    }
}

/// A validated ride request with defaults applied. Its JSON form is the
/// canonical request: fingerprinted, and stored so a worker can finish it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RideParams {
    // In sorted order, as the canonical form needs.
    pub amount_cents: i64,
    pub capture_method: CaptureMethod,
    pub currency: String,
    pub origin_lat: f64,
    pub origin_lon: f64,
    /// None: the user's saved card.
    pub payment_method: Option<String>,
    pub target_lat: f64,
    pub target_lon: f64,
}

impl RideParams {
    pub fn parse(body: &[u8]) -> Result<RideParams, Vec<FieldError>> {
        let body: RideBody = parse_body(body, expected).map_err(|err| vec![err])?;
        let mut errors = Vec::new();
        let origin_lat = coordinate(&mut errors, "origin_lat", body.origin_lat, 90.0);
        let origin_lon = coordinate(&mut errors, "origin_lon", body.origin_lon, 180.0);
        let target_lat = coordinate(&mut errors, "target_lat", body.target_lat, 90.0);
        let target_lon = coordinate(&mut errors, "target_lon", body.target_lon, 180.0);
        let amount_cents = match body.amount_cents {
            None => required(&mut errors, "amount_cents"),
            Some(amount) if !(MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS).contains(&amount) => {
                errors.push(FieldError::new(
                    "amount_cents",
                    format!(
                        "must be between {MIN_AMOUNT_CENTS} and {MAX_AMOUNT_CENTS} (minor units)"
                    ),
                ));
                0
            }
            Some(amount) => amount,
        };
        let currency = body.currency.unwrap_or_else(|| CURRENCIES[0].to_owned());
        if !CURRENCIES.contains(&currency.as_str()) {
            errors.push(FieldError::new(
                "currency",
                format!("must be one of {}", CURRENCIES.join(", ")),
            ));
        }
        if let Some(method) = &body.payment_method {
            if !is_payment_method_id(method) {
                errors.push(FieldError::new(
                    "payment_method",
                    "must be a payment method id: pm_ and 1 to 252 letters, digits or _",
                ));
            }
        }
        let capture_method = match body.capture_method.as_deref() {
            None => CaptureMethod::Manual,
            Some(text) => CaptureMethod::parse(text).unwrap_or_else(|| {
                errors.push(FieldError::new(
                    "capture_method",
                    "must be manual or automatic",
                ));
                CaptureMethod::Manual
            }),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(RideParams {
            origin_lat,
            origin_lon,
            target_lat,
            target_lon,
            amount_cents,
            currency,
            payment_method: body.payment_method,
            capture_method,
        })
    }

    /// The canonical JSON form.
    pub fn canonical(&self) -> CanonicalRequest {
        CanonicalRequest::of(self)
    }
}

fn required<T: Default>(errors: &mut Vec<FieldError>, field: &str) -> T {
    errors.push(FieldError::new(field, "is required"));
    T::default()
}

fn coordinate(errors: &mut Vec<FieldError>, field: &str, value: Option<f64>, bound: f64) -> f64 {
    match value {
        None => required(errors, field),
        Some(value) if !(-bound..=bound).contains(&value) => {
            errors.push(FieldError::new(
                field,
                format!("must be between -{bound} and {bound}"),
            ));
            0.0
        }
        // Adding 0.0 turns -0.0 into 0.0: the same place, so the same request.
        Some(value) => value + 0.0,
    }
}

/// What a mistyped field should have been.
fn expected(field: &str) -> Option<&'static str> {
    match field {
        "amount_cents" => Some("must be an integer number of minor units"),
        "origin_lat" | "origin_lon" | "target_lat" | "target_lon" => Some("must be a number"),
        "currency" | "payment_method" | "capture_method" => Some("must be a string"),
        _ => None,
    }
}

/// The endpoint (`flow::serve::<RideEndpoint>` serves a request,
/// `KeyRows<RideEndpoint>` its keys for the completer). Its steps hand
/// on the ride as each leaves it.
pub struct RideEndpoint;

impl Endpoint for RideEndpoint {
    const CALLERS: &'static [Role] = &[Role::Rider];
    type Point = RecoveryPoint;
    type Params = RideParams;
    type Context = ServiceContext;
    type Known = Ride;
    type Answer = Final<PaymentIntent>;

    /// Started -> RideCreated. A ride without a card to pay with is refused
    /// here, which rolls the claim back too: nothing is written, the key not
    /// consumed.
    fn start(
        cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RideLease,
        params: &RideParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let ride = create_ride(conn, lease, params, cx)?;
        Ok(Transition::Advance(RecoveryPoint::RideCreated, ride))
    }

    /// The ride the key made.
    fn load(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RideLease,
        _params: &RideParams,
        _point: RecoveryPoint,
    ) -> Result<Ride, ServiceError> {
        Ok(model::find_by_key(conn, lease.key_id())?)
    }

    /// ChargeCompleted -> Finished.
    fn atomic(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &RideLease,
        _params: &RideParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Finish(finish_answered(&ride)))
    }

    /// The PaymentIntent, holding no pooled connection while the gateway
    /// works.
    fn call(
        cx: &ServiceContext,
        lease: &RideLease,
        _params: &RideParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<CallOf<Self>, ServiceError> {
        let gateway = cx.gateway.as_ref();
        let answer = pay(gateway, cx.installation_id, lease, &ride);
        Ok(Called::Answered(
            ride,
            payments::create_answer(gateway, answer)?,
        ))
    }

    /// Any generation's PaymentIntent, from the gateway's lists.
    fn look_up(
        cx: &ServiceContext,
        lease: &RideLease,
        _params: &RideParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let call = call_metadata(cx.installation_id, lease.gateway_calls());
        let made = lookup::create_answer(
            cx.gateway.as_ref(),
            &call,
            ride.created_at,
            ride.customer.as_deref(),
        )?;
        Ok(lookup::found(ride, made))
    }

    /// RideCreated -> ChargeCompleted, or Finished for a payment that
    /// failed permanently.
    fn record(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RideLease,
        _params: &RideParams,
        ride: Ride,
        answer: Final<PaymentIntent>,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let recorded = match unpaid::unless_released(conn, lease.gateway_calls(), answer)? {
            Final::Made(intent) => record_payment(conn, &ride, &intent)?,
            Final::Refused(failure) => Final::Refused(failure),
        };
        match recorded {
            Final::Made(paid) => Ok(Transition::Advance(RecoveryPoint::ChargeCompleted, paid)),
            Final::Refused(failure) => {
                Ok(Transition::Finish(unpaid::finish(conn, &ride, &failure)?))
            }
        }
    }

    /// A payment the gateway answered finishes with the ride's one change
    /// (a rejection in a transaction).
    fn finishing(
        _cx: &ServiceContext,
        _lease: &RideLease,
        ride: &Ride,
        answer: &Final<PaymentIntent>,
    ) -> Result<Option<Finishing>, ServiceError> {
        match answer {
            // An answer given again may be of a payment since released:
            // `record` looks.
            Final::Made(intent) if !intent.replayed => payment_finishing(ride, intent),
            Final::Made(_) | Final::Refused(_) => Ok(None),
        }
    }
}

/// Names this endpoint's effect in its derived gateway keys. Not the
/// Charges API's `ride-charge`: Stripe refuses a key reused on another
/// endpoint.
pub const PAYMENT_KEY_PURPOSE: &str = "ride-payment-intent";

pub type RideLease = Lease<RecoveryPoint>;

/// Started -> RideCreated: the ride, pending, under the id derived from the
/// request, with the card that pays (the request's, or the user's saved
/// one) and where the rider's browser comes back to, fixed now so that
/// every resend of the call is the same call; and its audit record.
pub fn create_ride(
    conn: &mut PgConnection,
    lease: &RideLease,
    params: &RideParams,
    cx: &ServiceContext,
) -> Result<Ride, ServiceError> {
    let (payment_method, customer) = match &params.payment_method {
        Some(method) => (method.clone(), None),
        None => {
            let user = users::find(conn, lease.user_id())?;
            let method = user.stripe_payment_method_id.ok_or_else(|| {
                ServiceError::Invalid(vec![FieldError::new(
                    "payment_method",
                    "is required: the user has no saved card",
                )])
            })?;
            (method, user.stripe_customer_id)
        }
    };
    let ride = lease.insert_under_derived_id(&cx.id_secret, |public_id| {
        let ride = &NewRide {
            public_id,
            user_id: lease.user_id(),
            idempotency_key_id: lease.key_id(),
            origin_lat: params.origin_lat,
            origin_lon: params.origin_lon,
            target_lat: params.target_lat,
            target_lon: params.target_lon,
            amount_cents: params.amount_cents,
            currency: &params.currency,
            payment_method: &payment_method,
            capture_method: params.capture_method,
            customer: customer.as_deref(),
            return_url: &cx.return_url,
        };
        model::insert(conn, ride)
    })?;
    Ok(ride)
}

/// The PaymentIntent, created and confirmed under a key derived from the
/// key row, from what the ride row recorded: a retry after a timeout or a
/// crash asks for the same payment and gets it, never a second one. Holds
/// no database connection.
pub fn pay(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &RideLease,
    ride: &Ride,
) -> Result<PaymentIntent, GatewayError> {
    let calls = lease.gateway_calls();
    gateway.create_intent(&CreateIntent {
        idempotency_key: gateway_key(calls, PAYMENT_KEY_PURPOSE),
        amount_cents: ride.amount_cents,
        currency: ride.currency.clone(),
        customer: ride.customer.clone(),
        payment_method: ride.payment_method.clone(),
        capture_method: ride.capture_method,
        return_url: ride.return_url.clone().unwrap_or_default(),
        metadata: call_metadata(installation_id, calls),
        hold: calls.hold_request(),
        off_session: false,
        transfer_group: calls.transfer_group(),
        expand_balance_transaction: calls.asks_for_balance_transaction(),
    })
}

/// What the gateway's answer makes of the pending ride: `authorized`,
/// `captured`, `requires_action` or `processing`. An intent in any other
/// state is a rejection.
fn answered(ride: &Ride, intent: &PaymentIntent) -> Result<Final<Settlement>, ServiceError> {
    if (intent.amount_cents, intent.currency.as_str())
        != (ride.amount_cents, ride.currency.as_str())
    {
        return Err(ServiceError::Internal(anyhow::anyhow!(
            "PaymentIntent {} is for {} {}, ride {} for {} {}",
            intent.id,
            intent.amount_cents,
            intent.currency,
            ride.public_id,
            ride.amount_cents,
            ride.currency
        )));
    }
    let answers = [
        RideStatus::Authorized,
        RideStatus::Captured,
        RideStatus::RequiresAction,
        RideStatus::Processing,
    ];
    Ok(
        match settlement(RideStatus::Pending, intent)
            .filter(|settled| answers.contains(&settled.status))
        {
            Some(settled) => Final::Made(settled),
            None => Final::Refused(GatewayError::Rejected {
                message: format!(
                    "PaymentIntent {} answered as {} on confirmation",
                    intent.id, intent.status
                ),
            }),
        },
    )
}

/// RideCreated -> ChargeCompleted: what the gateway answered, recorded on
/// the ride (its event staged by the database's trigger in the same
/// statement); a rejection is returned as such (for `unpaid::finish`).
/// Only a holder of the key's lease moves a pending ride on, so a ride
/// found moved on means the lease was taken over (by the gateway's event,
/// say).
pub fn record_payment(
    conn: &mut PgConnection,
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<Final<Ride>, ServiceError> {
    let settled = match answered(ride, intent)? {
        Final::Made(settled) => settled,
        Final::Refused(rejected) => return Ok(Final::Refused(rejected)),
    };
    let ride = model::settle(conn, ride.id, may_follow(settled.status), &settled)?
        .ok_or(ServiceError::LeaseLost)?;
    Ok(Final::Made(ride))
}

/// RideCreated -> Finished as one statement with the key's final write: a
/// payment the gateway answered, recorded as `record_payment` does, with the
/// answer `finish_answered` gives. `None` for a rejection, which is
/// finished in a transaction.
pub fn payment_finishing(
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<Option<Finishing>, ServiceError> {
    let Final::Made(settled) = answered(ride, intent)? else {
        return Ok(None);
    };
    let response = finish_answered(&ride.settled(&settled));
    let from = may_follow(settled.status);
    let change = model::settle_finishing(ride.id, from, settled);
    Ok(Some(Finishing::new(change, response)))
}

/// ChargeCompleted -> Finished: the ride, as the answer stored.
pub fn finish_answered(ride: &Ride) -> StoredResponse {
    wire::ride::created(&ride.json())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"{"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80,
        "target_lon": -122.27, "amount_cents": 2000, "currency": "usd", "payment_method": "pm_card_visa"}"#;

    fn fields(body: &str) -> Vec<String> {
        RideParams::parse(body.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn a_valid_body_parses() {
        let params = RideParams::parse(VALID.as_bytes()).unwrap();
        assert_eq!(params.amount_cents, 2000);
        assert_eq!(params.payment_method.as_deref(), Some("pm_card_visa"));
        assert_eq!(params.capture_method, CaptureMethod::Manual);
    }

    #[test]
    fn currency_defaults_to_usd_in_the_canonical_form() {
        let without = r#"{"origin_lat": 1, "origin_lon": 2, "target_lat": 3, "target_lon": 4, "amount_cents": 100}"#;
        let with = r#"{"currency": "usd", "target_lon": 4, "target_lat": 3, "origin_lon": 2, "origin_lat": 1, "amount_cents": 100}"#;
        let a = RideParams::parse(without.as_bytes()).unwrap();
        let b = RideParams::parse(with.as_bytes()).unwrap();
        assert_eq!(a.canonical(), b.canonical());
    }

    /// The bytes the fingerprint hashes: a change here would make every
    /// stored key refuse its own retries.
    #[test]
    fn the_canonical_form_is_sorted_compact_json() {
        let params = RideParams::parse(VALID.as_bytes()).unwrap();
        assert_eq!(
            std::str::from_utf8(params.canonical().as_bytes()).unwrap(),
            r#"{"amount_cents":2000,"capture_method":"manual","currency":"usd","origin_lat":37.77,"origin_lon":-122.42,"payment_method":"pm_card_visa","target_lat":37.8,"target_lon":-122.27}"#
        );
    }

    #[test]
    fn negative_zero_is_zero() {
        let a = r#"{"origin_lat": -0.0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100}"#;
        let b = r#"{"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100}"#;
        assert_eq!(
            RideParams::parse(a.as_bytes()).unwrap().canonical(),
            RideParams::parse(b.as_bytes()).unwrap().canonical()
        );
    }

    #[test]
    fn every_missing_field_is_named() {
        assert_eq!(
            fields("{}"),
            [
                "origin_lat",
                "origin_lon",
                "target_lat",
                "target_lon",
                "amount_cents"
            ]
        );
    }

    #[test]
    fn out_of_range_values_are_named() {
        let body = r#"{"origin_lat": 91, "origin_lon": -181, "target_lat": 0, "target_lon": 0,
            "amount_cents": 49, "currency": "jpy", "payment_method": "tok_visa",
            "capture_method": "later"}"#;
        assert_eq!(
            fields(body),
            [
                "origin_lat",
                "origin_lon",
                "amount_cents",
                "currency",
                "payment_method",
                "capture_method"
            ]
        );
    }

    #[test]
    fn unknown_duplicate_and_mistyped_fields_are_named() {
        assert_eq!(fields(r#"{"tip": 5}"#), ["tip"]);
        assert_eq!(
            fields(r#"{"amount_cents": 100, "amount_cents": 100}"#),
            ["amount_cents"]
        );
        assert_eq!(fields(r#"{"amount_cents": 20.5}"#), ["amount_cents"]);
        assert_eq!(fields(r#"{"amount_cents": 1e30}"#), ["amount_cents"]);
        assert_eq!(fields(r#"{"origin_lat": "north"}"#), ["origin_lat"]);
    }

    #[test]
    fn non_objects_and_broken_json_are_body_errors() {
        assert_eq!(fields("[]"), ["body"]);
        // serde alone would take the fields in order from an array.
        assert_eq!(fields("[37.77, -122.42, 37.8, -122.27, 2000]"), ["body"]);
        assert_eq!(fields("{"), ["body"]);
        assert_eq!(fields(""), ["body"]);
        assert_eq!(fields(r#"{"origin_lat": NaN}"#), ["body"]);
    }

    #[test]
    fn the_canonical_form_round_trips() {
        let params = RideParams::parse(VALID.as_bytes()).unwrap();
        let stored: RideParams = serde_json::from_slice(params.canonical().as_bytes()).unwrap();
        assert_eq!(stored, params);
    }
}
