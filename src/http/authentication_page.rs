//! The simulated gateway's authentication page (`GATEWAY=simulated` only),
//! where a card that needs the rider's authentication sends the browser, as
//! a bank's 3-D Secure page does for Stripe: the rider confirms or refuses
//! the payment, and the page sends the browser back to ridepay's return page
//! with Stripe's query parameters. Guarded by the PaymentIntent's client
//! secret, and rate-limited per address like every route open to anyone.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::request_id;
use crate::db::DbPool;
use crate::doubles::intents::{self, Authenticating, Authentication, IntentSettings};

pub const PATH: &str = "/simulated-gateway/authenticate";

/// What the page works on: the doubles' PaymentIntents.
pub struct AuthenticationPage {
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

fn page(status: actix_web::http::StatusCode, title: &str, body: &str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>{title}</title></head>\n<body><main>\n<h1>{title}</h1>\n{body}\n</main></body></html>\n"
        ))
}

fn not_found() -> HttpResponse {
    page(
        actix_web::http::StatusCode::NOT_FOUND,
        "This payment link is not valid",
        "<p>Nothing was charged. Go back to the app to try again.</p>",
    )
}

fn unavailable() -> HttpResponse {
    page(
        actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
        "Your bank cannot be reached just now",
        "<p>Nothing was charged. Reload this page in a moment.</p>",
    )
}

/// Text for HTML: the page shows only values of its own making, escaped all
/// the same.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `GET`: what the bank asks the rider.
pub async fn show(
    query: web::Query<Opened>,
    page_data: web::Data<AuthenticationPage>,
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
        Some(Some((Authenticating { intent, .. }, secret))) => {
            let amount = format!(
                "{}.{:02} {}",
                intent.amount_cents / 100,
                intent.amount_cents % 100,
                intent.currency.to_uppercase()
            );
            let hidden = format!(
                "<input type=\"hidden\" name=\"payment_intent\" value=\"{}\">\
                 <input type=\"hidden\" name=\"client_secret\" value=\"{}\">",
                escape(&intent.id),
                escape(&secret)
            );
            page(
                actix_web::http::StatusCode::OK,
                "Confirm your payment",
                &format!(
                    "<p>Your bank asks you to confirm a payment of <strong id=\"amount\">{amount}</strong> \
                     to ridepay.</p>\n\
                     <form method=\"post\" action=\"{PATH}\">{hidden}\
                     <button id=\"complete\" name=\"outcome\" value=\"complete\">Confirm</button> \
                     <button id=\"fail\" name=\"outcome\" value=\"fail\">Refuse</button></form>"
                ),
            )
        }
    }
}

/// `POST`: the rider's answer, then back to where the payment was made, as
/// Stripe sends the browser back (`payment_intent`,
/// `payment_intent_client_secret`, `redirect_status`).
pub async fn answer(
    form: web::Form<Answered>,
    page_data: web::Data<AuthenticationPage>,
) -> HttpResponse {
    let Answered {
        payment_intent,
        client_secret,
        outcome,
    } = form.into_inner();
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
    let Some(return_url) = found.return_url.filter(|url| !url.is_empty()) else {
        return page(
            actix_web::http::StatusCode::OK,
            "Thank you",
            "<p>You can go back to the app.</p>",
        );
    };
    let redirect_status = match found.intent.status {
        crate::payments::IntentStatus::RequiresPaymentMethod => "failed",
        crate::payments::IntentStatus::Processing => "processing",
        _ => "succeeded",
    };
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payment_intent", &found.intent.id)
        .append_pair("payment_intent_client_secret", &client_secret)
        .append_pair("redirect_status", redirect_status)
        .finish();
    let separator = if return_url.contains('?') { '&' } else { '?' };
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, format!("{return_url}{separator}{query}")))
        .finish()
}
