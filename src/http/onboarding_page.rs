//! The simulated gateway's onboarding page (`GATEWAY=simulated` only),
//! where its account links send a driver, as Stripe's hosted onboarding
//! does: the driver submits (their account can then be paid) or leaves,
//! and the page sends them to the platform's return page; a link used or
//! expired sends them to its refresh page. Guarded by the link's random id,
//! and rate-limited per address like every route open to anyone.

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::authentication_page::SimulatedGatewayPages;
use super::request_id;
use super::routing::{html, html_posting_to};
use ridepay_doubles::accounts::{self, Onboarded, Onboarding};
use ridepay_doubles::events::Double;
use ridepay_doubles::onboarding;

pub const PATH: &str = "/simulated-gateway/onboard";

/// The page's route.
pub fn routes(config: &mut web::ServiceConfig) {
    config.service(super::routing::page(PATH, show, answer));
}

#[derive(Debug, Deserialize)]
pub struct Opened {
    link: String,
}

#[derive(Debug, Deserialize)]
pub struct Answered {
    link: String,
    /// `complete` or `incomplete`.
    outcome: String,
}

fn not_found() -> HttpResponse {
    html(StatusCode::NOT_FOUND, onboarding::not_valid())
}

/// The driver sent on: to the return page, or a spent link's refresh page.
fn onward(onboarding: &Onboarding) -> HttpResponse {
    match onboarding::next_location(onboarding) {
        Some(location) => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, location))
            .finish(),
        None => not_found(),
    }
}

/// The link, read (`answer` none) or answered, on a blocking thread; `None`
/// while the doubles' store cannot be reached.
async fn onboarded(
    pages: web::Data<SimulatedGatewayPages>,
    link: String,
    answer: Option<Onboarded>,
) -> Option<Option<Onboarding>> {
    request_id::block(move || {
        let mut conn = pages.pool.get().ok()?;
        match answer {
            None => accounts::onboarding(&mut conn, &link, Double::Simulated),
            Some(answer) => accounts::onboard(&mut conn, &link, Double::Simulated, answer),
        }
        .ok()
    })
    .await
    .ok()
    .flatten()
}

/// `GET`: what the page asks the driver.
pub async fn show(
    query: web::Query<Opened>,
    pages: web::Data<SimulatedGatewayPages>,
) -> HttpResponse {
    let link = query.into_inner().link;
    match onboarded(pages, link.clone(), None).await {
        None => html(StatusCode::SERVICE_UNAVAILABLE, onboarding::unavailable()),
        Some(None) => not_found(),
        Some(Some(found)) if found.spent => onward(&found),
        Some(Some(found)) => html_posting_to(
            StatusCode::OK,
            onboarding::question(&found, &link, PATH),
            onboarding::return_origin(&found).as_deref(),
        ),
    }
}

/// `POST`: the driver's answer, then on to the platform's page.
pub async fn answer(
    request: HttpRequest,
    payload: web::Payload,
    pages: web::Data<SimulatedGatewayPages>,
) -> HttpResponse {
    let answered = match super::routing::page_form(&request, payload).await {
        Ok(answered) => answered,
        Err(refused) => return refused,
    };
    let Some(Answered { link, outcome }) = answered else {
        return not_found();
    };
    let answer = match outcome.as_str() {
        "complete" => Onboarded::Complete,
        "incomplete" => Onboarded::Incomplete,
        _ => return not_found(),
    };
    match onboarded(pages, link, Some(answer)).await {
        None => html(StatusCode::SERVICE_UNAVAILABLE, onboarding::unavailable()),
        Some(None) => not_found(),
        Some(Some(found)) => onward(&found),
    }
}
