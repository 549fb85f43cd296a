//! The simulated gateway's authentication page (`GATEWAY=simulated` only),
//! where a card that needs the rider's authentication sends the browser, as
//! a bank's 3-D Secure page does for Stripe: the rider confirms or refuses
//! the payment, and the page sends the browser back to ridepay's return page
//! with Stripe's query parameters. Guarded by the PaymentIntent's client
//! secret, and rate-limited per address like every route open to anyone.

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::request_id;
use super::routing::{html, html_posting_to};
use crate::db::DbPool;
use ridepay_doubles::authentication;
use ridepay_doubles::intents::{self, Authentication, IntentSettings};

pub const PATH: &str = "/simulated-gateway/authenticate";

/// The page's route.
pub fn routes(config: &mut web::ServiceConfig) {
    config.service(super::routing::page(PATH, show, answer));
}

/// What the simulated gateway's pages (this one and the onboarding page)
/// work on: the doubles' records, and how their PaymentIntents behave.
pub struct SimulatedGatewayPages {
    pub pool: DbPool,
    pub settings: IntentSettings,
}

#[derive(Debug, Deserialize)]
pub struct Opened {
    payment_intent: String,
    client_secret: String,
}

#[derive(Debug, Deserialize)]
pub struct Answered {
    payment_intent: String,
    client_secret: String,
    /// `complete` or `fail`.
    outcome: String,
}

fn not_found() -> HttpResponse {
    html(StatusCode::NOT_FOUND, authentication::not_valid())
}

fn unavailable() -> HttpResponse {
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        authentication::unavailable(),
    )
}

/// `GET`: what the bank asks the rider.
pub async fn show(
    query: web::Query<Opened>,
    page_data: web::Data<SimulatedGatewayPages>,
) -> HttpResponse {
    let Opened {
        payment_intent,
        client_secret,
    } = query.into_inner();
    let found = request_id::block(move || {
        let mut conn = page_data.pool.get().ok()?;
        intents::authenticating(
            &mut conn,
            &payment_intent,
            &client_secret,
            &page_data.settings,
        )
        .ok()
        .map(|found| found.map(|found| (found, client_secret)))
    })
    .await
    .ok()
    .flatten();
    match found {
        None => unavailable(),
        Some(None) => not_found(),
        Some(Some((found, secret))) => html_posting_to(
            StatusCode::OK,
            authentication::question(&found, &secret, PATH),
            authentication::return_origin(&found).as_deref(),
        ),
    }
}

/// `POST`: the rider's answer, then back to where the payment was made, as
/// Stripe sends the browser back (`payment_intent`,
/// `payment_intent_client_secret`, `redirect_status`).
pub async fn answer(
    request: HttpRequest,
    payload: web::Payload,
    page_data: web::Data<SimulatedGatewayPages>,
) -> HttpResponse {
    let answered = match super::routing::page_form(&request, payload).await {
        Ok(answered) => answered,
        Err(refused) => return refused,
    };
    let Some(Answered {
        payment_intent,
        client_secret,
        outcome,
    }) = answered
    else {
        return not_found();
    };
    let outcome = match outcome.as_str() {
        "complete" => Authentication::Completed,
        "fail" => Authentication::Failed,
        _ => return not_found(),
    };
    let secret = client_secret.clone();
    let answered = request_id::block(move || {
        let mut conn = page_data.pool.get().ok()?;
        intents::authenticate(
            &mut conn,
            &payment_intent,
            &secret,
            outcome,
            &page_data.settings,
        )
        .ok()
    })
    .await
    .ok()
    .flatten();
    let found = match answered {
        None => return unavailable(),
        Some(None) => return not_found(),
        Some(Some(found)) => found,
    };
    match authentication::return_location(&found, &client_secret) {
        Some(location) => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, location))
            .finish(),
        None => html(StatusCode::OK, authentication::thanks()),
    }
}
