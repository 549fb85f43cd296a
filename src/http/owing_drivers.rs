//! The POSTs that may leave a driver owed a transfer or a reversal (a
//! ride's completion, cancellation, tip, refund and assignment): served as
//! any other, then this instance's transfer worker woken to make what they
//! owe at once, rather than at its next interval. The worker makes it, not
//! the request, so no answer waits on a transfer; a transfer's own row
//! (owed, claimed, made) is where its making resumes after a crash.

use actix_web::HttpResponse;

use crate::context::ServiceContext;
use crate::http::idempotent::IdempotentPost;
use crate::idempotency::Endpoint;
use crate::validation::FieldError;
use crate::wire::problem::Problem;

pub async fn serve<E: Endpoint<Context = ServiceContext>>(
    post: IdempotentPost,
    parse: impl FnOnce(&[u8]) -> Result<E::Params, Vec<FieldError>>,
) -> Result<HttpResponse, Problem> {
    let transfers_due = post.context().drivers.transfers_due.clone();
    let answer = post.serve::<E>(parse).await;
    transfers_due.ring();
    answer
}
