//! The fake Stripe's authentication page (`/fake/authenticate`), where its
//! PaymentIntents that need the rider's authentication send the browser; the
//! same page the simulated gateway's is (`doubles::authentication`).

use super::calls::connection;
use super::http::{PageRequest, Request, Response};
use super::state::State;
use crate::authentication;
use crate::intents::{self, Authentication};

pub const PATH: &str = "/fake/authenticate";

/// `GET` shows the question; `POST` takes the answer and sends the browser
/// back.
pub fn serve(state: &State, request: &Request) -> Response {
    let Some(PageRequest {
        fields: asked,
        outcome,
    }) = request.page_request()
    else {
        return Response::html(405, authentication::not_valid());
    };
    let answer = match outcome.as_deref() {
        None => None,
        Some("complete") => Some(Authentication::Completed),
        Some("fail") => Some(Authentication::Failed),
        Some(_) => return Response::html(404, authentication::not_valid()),
    };
    let (Some(id), Some(secret)) = (asked.get("payment_intent"), asked.get("client_secret")) else {
        return Response::html(404, authentication::not_valid());
    };
    let Ok(mut conn) = connection(state) else {
        return Response::html(503, authentication::unavailable());
    };
    let found = match answer {
        None => intents::authenticating(&mut conn, id, secret, &state.intents),
        Some(outcome) => intents::authenticate(&mut conn, id, secret, outcome, &state.intents),
    };
    match (found, answer) {
        (Err(_), _) => Response::html(503, authentication::unavailable()),
        (Ok(None), _) => Response::html(404, authentication::not_valid()),
        (Ok(Some(found)), None) => Response::html_posting_to(
            200,
            authentication::question(&found, secret, PATH),
            authentication::return_origin(&found).as_deref(),
        ),
        (Ok(Some(found)), Some(_)) => match authentication::return_location(&found, secret) {
            Some(location) => Response::html(303, String::new()).with_header("Location", location),
            None => Response::html(200, authentication::thanks()),
        },
    }
}
