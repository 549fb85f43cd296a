//! The POSTs that may leave a driver owed a transfer or a reversal (a
//! ride's completion, cancellation, tip, refund and assignment): served as
//! any other, then, when their answer may have owed a driver something,
//! this instance's transfer worker woken to make it at once rather than at
//! its next interval. The worker makes it, not the request, so no answer
//! waits on a transfer; a transfer's own row (owed, claimed, made) is where
//! its making resumes after a crash, and a wake-up missed (the replay of an
//! answer whose request crashed before waking it) only waits for the
//! interval.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::HttpResponse;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::context::ServiceContext;
use crate::http::idempotent::{IdempotentPost, IDEMPOTENT_REPLAYED};
use crate::idempotency::Endpoint;
use crate::validation::FieldError;
use crate::wire::problem::Problem;

pub async fn serve<E: Endpoint<Context = ServiceContext>>(
    post: IdempotentPost,
    parse: impl FnOnce(&[u8]) -> Result<E::Params, Vec<FieldError>>,
) -> Result<HttpResponse, Problem> {
    let transfers_due = post.context().drivers.transfers_due.clone();
    let answer = post.serve::<E>(parse).await?;
    if answer.headers().contains_key(IDEMPOTENT_REPLAYED) {
        return Ok(answer);
    }
    let (head, body) = answer.into_parts();
    let body = match body.try_into_bytes() {
        Ok(bytes) => {
            if may_owe(&bytes) {
                transfers_due.ring();
            }
            BoxBody::new(bytes)
        }
        Err(streamed) => {
            transfers_due.ring();
            streamed
        }
    };
    Ok(head.set_body(body))
}

/// Whether an answer may have owed a driver something: any but a ride's
/// without a driver, which owes nobody. A refund's may: its failure owes
/// again what its reversal took.
fn may_owe(answer: &[u8]) -> bool {
    /// A ride's answer, told from others by its `capture_method`.
    #[derive(Deserialize)]
    struct Ride {
        #[serde(rename = "capture_method")]
        _capture_method: IgnoredAny,
        driver: Option<IgnoredAny>,
    }
    serde_json::from_slice::<Ride>(answer).map_or(true, |ride| ride.driver.is_some())
}

#[cfg(test)]
mod tests {
    use super::may_owe;

    #[test]
    fn only_a_ride_without_a_driver_owes_nobody() {
        let ride = |driver: &str| {
            format!(r#"{{"id": "ride_1", "capture_method": "automatic", "driver": {driver}}}"#)
        };
        assert!(!may_owe(ride("null").as_bytes()));
        assert!(may_owe(ride(r#"{"id": "drv_1"}"#).as_bytes()));
        assert!(may_owe(
            br#"{"id": "re_1", "status": "pending", "amount_cents": 500}"#
        ));
        assert!(may_owe(b"not json"));
    }
}
