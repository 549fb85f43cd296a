//! The phases of `POST /api/rides/{id}/complete`: the ride taken for the
//! key, the hold raised when the final fare is more than it covers (Stripe's
//! `increment_authorization`, whose amount is the new total), and the final
//! fare captured; what the hold does not cover of it is released.

use diesel::prelude::*;

use super::recovery_point::RecoveryPoint;
use super::request::CompleteParams;
use crate::idempotency::{Lease, StoredResponse};
use crate::payments::{
    self, derived_key, GatewayError, IncrementIntent, PaymentGateway, PaymentIntent,
};
use crate::problem::{Problem, ProblemKind};
use crate::rides::lifecycle::{self, Answer, Taking};
use crate::rides::model::{Ride, RideStatus};
use crate::schema::rides;
use crate::service_error::ServiceError;

/// Name the effects in their derived gateway keys.
pub const INCREMENT_KEY_PURPOSE: &str = "ride-increment";
pub const CAPTURE_KEY_PURPOSE: &str = "ride-capture";

pub type CompleteLease = Lease<RecoveryPoint>;

/// Started -> CompletionStarted: the ride, `authorized`, taken for the key.
/// One whose hold lapsed is refused as such, nothing written.
pub fn begin(
    conn: &mut PgConnection,
    lease: &CompleteLease,
    params: &CompleteParams,
) -> Result<Ride, ServiceError> {
    lifecycle::take(
        conn,
        lease.user_id(),
        params.ride_id,
        lease.key_id(),
        &Taking {
            done: "completed",
            audit_action: "ride.completion_started",
            allowed: &[RideStatus::Authorized],
            expired: ProblemKind::AuthorizationExpired,
        },
    )
}

/// Whether the ride's hold covers the final fare as it is.
pub fn covered(ride: &Ride, params: &CompleteParams) -> bool {
    params.final_amount_cents <= ride.amount_authorized_cents
}

/// The answer to raising the hold: the raised intent, or a refusal for
/// good.
pub type Raised = Result<PaymentIntent, GatewayError>;

/// The hold raised to the final fare, which it does not cover. Holds no
/// connection.
pub fn raise(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &CompleteLease,
    ride: &Ride,
    params: &CompleteParams,
) -> Result<Raised, ServiceError> {
    let answer = gateway.increment_intent(&IncrementIntent {
        idempotency_key: derived_key(installation_id, INCREMENT_KEY_PURPOSE, lease.key_id()),
        intent_id: lifecycle::intent_of(ride)?,
        amount_cents: params.final_amount_cents,
    });
    payments::final_outcome(answer)
}

/// CompletionStarted -> HoldCovers: the raised hold recorded on the ride.
pub fn record_raise(
    conn: &mut PgConnection,
    ride: &Ride,
    raised: &PaymentIntent,
) -> Result<Ride, ServiceError> {
    Ok(diesel::update(rides::table.find(ride.id))
        .set((
            rides::amount_authorized_cents.eq(raised.amount_capturable_cents),
            rides::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Ride::as_returning())
        .get_result(conn)?)
}

/// CompletionStarted -> Finished: the gateway would not raise the hold. A
/// 402 stored with the decline's code (`incremental_authorization_unavailable`
/// when the card or account offers no increments); the ride stays
/// `authorized`, so a completion under another key may capture what the
/// hold covers.
pub fn finish_raise_refused(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &CompleteLease,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let problem = match failure {
        GatewayError::Declined {
            code,
            decline_code,
            message,
            ..
        } => Problem::new(ProblemKind::CardDeclined, message.clone())
            .with_extension("code", code.as_str())
            .with_extension("decline_code", decline_code.clone()),
        other => Problem::new(
            ProblemKind::CardDeclined,
            format!("the hold cannot be raised to the final fare: {other}"),
        )
        .with_extension("code", "incremental_authorization_unavailable")
        .with_extension("decline_code", None::<String>),
    };
    lifecycle::finish_refused(conn, ride, lease.key_id(), problem)
}

/// HoldCovers -> Finished: the capture recorded (200, ride `captured`); a
/// hold that lapsed makes the ride `expired` (422 `authorization-expired`);
/// any other refusal leaves it `authorized` (502).
pub fn finish_captured(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &CompleteLease,
    capture: &Answer,
) -> Result<StoredResponse, ServiceError> {
    match capture {
        Answer::Made(intent) => {
            lifecycle::finish_settled(conn, ride, lease.key_id(), RideStatus::Captured, intent)
        }
        Answer::Lapsed(intent) => {
            lifecycle::expire(conn, ride, intent)?;
            let problem = Problem::new(
                ProblemKind::AuthorizationExpired,
                "the card's authorization lapsed before the ride was completed; nothing was charged",
            )
            .with_extension("ride_id", ride.id);
            Ok(StoredResponse::problem(&problem))
        }
        Answer::Refused(refusal, _) => lifecycle::finish_refused(
            conn,
            ride,
            lease.key_id(),
            lifecycle::refused_problem(refusal),
        ),
    }
}
