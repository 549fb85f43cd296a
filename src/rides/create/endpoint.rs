//! `POST /api/rides` on the idempotency flow: the ride, pending, with its
//! audit record (Started); the PaymentIntent, created and confirmed under a
//! key derived from the key row (RideCreated, holding no connection); what
//! the gateway answered, recorded on the ride (ChargeCompleted); the answer
//! stored. A retry, or the completer, resumes from the recovery point the
//! key reached.

use diesel::PgConnection;
use serde_json::json;

use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use crate::context::ServiceContext;
use crate::idempotency::{
    CallOf, Called, Endpoint, Finishing, Found, FoundOf, Lease, StoredResponse, Transition,
    TransitionOf,
};
use crate::payments::{
    self, call_metadata, gateway_key, lookup, released, CreateIntent, Final, GatewayError,
    PaymentGateway, PaymentIntent,
};
use crate::rides::model::{self, NewRide, Ride, RideStatus, Settlement};
use crate::rides::transitions::{may_follow, settlement};
use crate::service_error::ServiceError;
use crate::validation::FieldError;
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};
use crate::{audit, users};

/// The endpoint (`flow::serve::<RideEndpoint>` serves a request,
/// `flow::Keys<RideEndpoint>` its keys for the completer). Its steps hand
/// on the ride as each leaves it.
pub struct RideEndpoint;

impl Endpoint for RideEndpoint {
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
        let ride = create_ride(conn, lease, params, &cx.return_url)?;
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
        let answer = pay(gateway, cx.installation_id, lease, &ride)
            .and_then(|intent| released::reread_if_replayed(gateway, intent));
        Ok(Called::Answered(ride, payments::final_answer(answer)?))
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
        Ok(match made {
            Some(answer) => Found::Made(ride, answer),
            None => Found::Absent {
                known: ride,
                refused: Final::Refused(lookup::never_made()),
            },
        })
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
        let recorded = match released::unless_released(conn, lease.gateway_calls(), answer)? {
            Final::Made(intent) => record_payment(conn, &ride, &intent)?,
            Final::Refused(failure) => Final::Refused(failure),
        };
        match recorded {
            Final::Made(paid) => Ok(Transition::Advance(RecoveryPoint::ChargeCompleted, paid)),
            Final::Refused(failure) => {
                Ok(Transition::Finish(finish_unpaid(conn, &ride, &failure)?))
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

/// Started -> RideCreated: the ride, pending, with the card that pays (the
/// request's, or the user's saved one) and where the rider's browser comes
/// back to, fixed now so that every resend of the call is the same call;
/// and its audit record.
pub fn create_ride(
    conn: &mut PgConnection,
    lease: &RideLease,
    params: &RideParams,
    return_url: &str,
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
    let ride = model::insert(
        conn,
        &NewRide {
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
            return_url,
        },
        audit::of_changed(
            lease.user_id(),
            "ride.created",
            "ride",
            json!({ "idempotency_key_id": lease.key_id(), "amount_cents": params.amount_cents }),
        ),
    )?;
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
    gateway.create_intent(&CreateIntent {
        idempotency_key: gateway_key(lease.gateway_calls(), PAYMENT_KEY_PURPOSE),
        amount_cents: ride.amount_cents,
        currency: ride.currency.clone(),
        customer: ride.customer.clone(),
        payment_method: ride.payment_method.clone(),
        capture_method: ride.capture_method,
        return_url: ride.return_url.clone().unwrap_or_default(),
        metadata: call_metadata(installation_id, lease.gateway_calls()),
        hold: lease.gateway_calls().hold_request(),
        off_session: false,
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
            ride.id,
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
/// statement); a rejection is returned as such (for `finish_unpaid`). Only a holder of the key's lease moves a pending
/// ride on, so a ride found moved on means the lease was taken over (by the
/// gateway's event, say).
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

/// RideCreated -> Finished for a payment that failed permanently: a decline
/// (402; the PaymentIntent it left behind recorded) or a rejection (502),
/// stored so that retries get the same answer.
pub fn finish_unpaid(
    conn: &mut PgConnection,
    ride: &Ride,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let (status, problem, intent) = match failure {
        GatewayError::Declined {
            code,
            decline_code,
            message,
            payment_intent,
        } => (
            RideStatus::PaymentDeclined,
            Problem::new(ProblemKind::CardDeclined, message.clone())
                .with_extension("ride_id", ride.id)
                .with_extension("code", code.as_str())
                .with_extension("decline_code", decline_code.clone()),
            payment_intent.clone(),
        ),
        other => {
            log::error!(
                "payment gateway rejected the payment of ride {}: {other}",
                ride.id
            );
            (
                RideStatus::PaymentFailed,
                Problem::new(ProblemKind::PaymentGatewayRejected, other.to_string())
                    .with_extension("ride_id", ride.id),
                None,
            )
        }
    };
    let unpaid = model::Settlement {
        status,
        payment_intent_id: intent,
        client_secret: None,
        next_action: None,
        amount_authorized_cents: 0,
        amount_captured_cents: 0,
        settling_key_id: None,
        amount_capturable_max_cents: None,
        hold_expires_at: None,
        tip_cents: 0,
    };
    model::settle(conn, ride.id, &[RideStatus::Pending], &unpaid)?
        .ok_or(ServiceError::LeaseLost)?;
    Ok(wire::problem::stored(&problem))
}
