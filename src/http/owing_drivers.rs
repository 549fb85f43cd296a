//! The POSTs that may leave a driver owed a transfer or a reversal (a
//! ride's completion, cancellation, tip, refund and assignment): served as
//! any other, then, when their answer may have owed a driver something,
//! this instance's transfer worker woken to make it at once rather than at
//! its next interval. The worker makes it, not the request, so no answer
//! waits on a transfer; a transfer's own row (owed, claimed, made) is where
//! its making resumes after a crash, and a wake-up missed (a replay of an
//! answer whose request crashed before waking it) only waits for the
//! interval.

use actix_web::HttpResponse;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::context::ServiceContext;
use crate::http::idempotent::{respond, IdempotentPost};
use crate::idempotency::{Endpoint, StoredResponse};
use crate::validation::FieldError;
use crate::wire::problem::Problem;

/// Which of an endpoint's answers may have owed a driver something.
#[derive(Debug, Clone, Copy)]
pub enum Owing {
    /// Every answer: a refund owes a reversal when it is made, and its
    /// failure owes the reversed amount again.
    Always,
    /// An answer that shows a ride with a driver: a ride no driver drives
    /// owes nobody.
    WhenTheRideHasADriver,
}

impl Owing {
    fn may_owe(self, answer: &StoredResponse) -> bool {
        #[derive(Deserialize)]
        struct Ride {
            driver: Option<IgnoredAny>,
        }
        match self {
            Owing::Always => true,
            Owing::WhenTheRideHasADriver => {
                serde_json::from_slice::<Ride>(&answer.body).is_ok_and(|ride| ride.driver.is_some())
            }
        }
    }
}

pub async fn serve<E: Endpoint<Context = ServiceContext>>(
    post: IdempotentPost,
    parse: impl FnOnce(&[u8]) -> Result<E::Params, Vec<FieldError>>,
    owing: Owing,
) -> Result<HttpResponse, Problem> {
    let transfers_due = post.context().drivers.transfers_due.clone();
    let outcome = post.serve_outcome::<E>(parse).await?;
    if !outcome.replayed && owing.may_owe(&outcome.response) {
        transfers_due.ring();
    }
    Ok(respond(outcome.response, outcome.replayed))
}
