//! The fake Stripe's onboarding page (`/fake/onboard`), where its account
//! links send a driver; the same page the simulated gateway's is
//! (`doubles::onboarding`).

use super::calls::connection;
use super::http::{PageRequest, Request, Response};
use super::state::State;
use crate::accounts::{self, Onboarded};
use crate::events::Double;
use crate::onboarding;

pub const PATH: &str = "/fake/onboard";

/// `GET` shows the question (or sends a spent link's driver to its refresh
/// page); `POST` takes the answer and sends the driver back.
pub fn serve(state: &State, request: &Request) -> Response {
    let Some(PageRequest {
        fields: asked,
        outcome,
    }) = request.page_request()
    else {
        return Response::html(405, onboarding::not_valid());
    };
    let answer = match outcome.as_deref() {
        None => None,
        Some("complete") => Some(Onboarded::Complete),
        Some("incomplete") => Some(Onboarded::Incomplete),
        Some(_) => return Response::html(404, onboarding::not_valid()),
    };
    let Some(link) = asked.get("link") else {
        return Response::html(404, onboarding::not_valid());
    };
    let Ok(mut conn) = connection(state) else {
        return Response::html(503, onboarding::unavailable());
    };
    let found = match answer {
        None => accounts::onboarding(&mut conn, link, Double::Fake),
        Some(outcome) => accounts::onboard(&mut conn, link, Double::Fake, outcome),
    };
    let onboarding = match found {
        Err(_) => return Response::html(503, onboarding::unavailable()),
        Ok(None) => return Response::html(404, onboarding::not_valid()),
        Ok(Some(found)) => found,
    };
    if answer.is_none() && !onboarding.spent {
        return Response::html_posting_to(
            200,
            onboarding::question(&onboarding, link, PATH),
            onboarding::return_origin(&onboarding).as_deref(),
        );
    }
    match onboarding::next_location(&onboarding) {
        Some(location) => Response::html(303, String::new()).with_header("Location", location),
        None => Response::html(404, onboarding::not_valid()),
    }
}
