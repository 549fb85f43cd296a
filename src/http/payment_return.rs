//! `GET /payments/return`: where the rider's browser lands after
//! authenticating a payment, with Stripe's query parameters
//! (`payment_intent`, `payment_intent_client_secret`, `redirect_status`).
//! A small page in the rider's words; no API key (the client secret guards
//! it), rate-limited per address like every route open to anyone.
//! `redirect_status` is never read: the gateway says what happened.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::request_id;
use super::routing::html;
use crate::context::ServiceContext;
use crate::gateway_events::callback::{self, Callback};
use crate::rides::model::{Ride, RideStatus};
use crate::service_error::ServiceError;
use ridepay_gateway::html::{money, page};

/// Where the gateway sends the rider's browser back after authenticating,
/// under `PUBLIC_BASE_URL`.
pub const PATH: &str = "/payments/return";

/// How long a rider should wait before reloading while the gateway cannot
/// be asked.
const RETRY_AFTER: Duration = Duration::from_secs(5);

#[derive(Deserialize)]
struct Query {
    payment_intent: Option<String>,
    payment_intent_client_secret: Option<String>,
}

fn not_found() -> HttpResponse {
    html(
        StatusCode::NOT_FOUND,
        page(
            "We could not find this payment",
            "<p>This link does not match a payment of yours. Nothing was charged through \
             it. Go back to the app.</p>",
        ),
    )
}

fn confirming() -> HttpResponse {
    let mut response = html(
        StatusCode::SERVICE_UNAVAILABLE,
        page(
            "Confirming your payment",
            "<p>We could not reach the payment provider to confirm your payment yet. \
             Nothing has changed. Reload this page in a moment.</p>",
        ),
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from(RETRY_AFTER.as_secs()),
    );
    response
}

/// The ride's state in the rider's words. A payment already applied shows
/// the same success page every time, never an error that invites paying
/// again.
fn outcome(ride: &Ride) -> String {
    let held = money(ride.amount_authorized_cents, &ride.currency);
    let paid = money(ride.amount_captured_cents, &ride.currency);
    let (title, text) = match ride.status {
        RideStatus::Authorized => (
            "Your ride is booked",
            format!(
                "Your card is authorized for {held}. You pay the final fare when the ride ends."
            ),
        ),
        RideStatus::Captured | RideStatus::Refunded | RideStatus::Disputed => (
            "Payment complete",
            format!("You paid {paid}. You can go back to the app."),
        ),
        RideStatus::Processing | RideStatus::Pending => (
            "Your payment is processing",
            "Your bank is still confirming the payment. Reload this page in a moment, or \
             go back to the app: it shows the ride when it is confirmed."
                .to_owned(),
        ),
        RideStatus::RequiresAction => (
            "Your payment is not confirmed yet",
            "Your bank has not confirmed the payment. Go back to the app to finish it.".to_owned(),
        ),
        RideStatus::PaymentDeclined | RideStatus::PaymentFailed => (
            "Your payment did not go through",
            "Your bank did not confirm the payment and you have not been charged. Go back \
             to the app to choose another way to pay."
                .to_owned(),
        ),
        RideStatus::Canceled | RideStatus::Expired => (
            "This ride was cancelled",
            format!("You were charged {paid}. You can go back to the app."),
        ),
    };
    page(
        title,
        &format!(
            "<p id=\"outcome\" data-status=\"{}\">{text}</p>",
            ride.status
        ),
    )
}

/// Where the rider's browser lands after authenticating a payment.
///
/// The ride is found by `payment_intent` and the client secret checked; the
/// PaymentIntent is fetched from the gateway and applied once; the page says
/// what became of the payment. `redirect_status` is never trusted.
#[utoipa::path(
    get,
    path = "/payments/return",
    tag = "webhooks",
    params(
        ("payment_intent" = String, Query, description = "The PaymentIntent (`pi_...`)"),
        ("payment_intent_client_secret" = String, Query, description = "Its client secret"),
        ("redirect_status" = Option<String>, Query, description = "Sent by the gateway; ignored"),
    ),
    responses(
        (status = 200, description = "What became of the payment, for the rider", content_type = "text/html"),
        (status = 404, description = "No payment of ridepay's with that PaymentIntent and secret", content_type = "text/html"),
        (status = 429, description = "Too many requests from the address", body = crate::http::openapi_components::ProblemDocument, content_type = "application/problem+json"),
        (status = 503, description = "The gateway cannot be asked yet; nothing changed (`Retry-After`)", content_type = "text/html"),
    )
)]
pub async fn payment_return(
    request: HttpRequest,
    context: web::Data<ServiceContext>,
) -> HttpResponse {
    let query: Query = match serde_urlencoded::from_str(request.query_string()) {
        Ok(query) => query,
        Err(_) => return not_found(),
    };
    let (Some(payment_intent), Some(client_secret)) =
        (query.payment_intent, query.payment_intent_client_secret)
    else {
        return not_found();
    };
    // Longer than any id or secret the gateway makes: nothing to look up.
    if payment_intent.len() > 255 || client_secret.len() > 512 {
        return not_found();
    }
    let returned = request_id::block(move || {
        callback::returned(
            &context,
            &Callback {
                payment_intent: &payment_intent,
                client_secret: &client_secret,
            },
        )
    })
    .await;
    match returned {
        Ok(Ok(Some(ride))) => html(StatusCode::OK, outcome(&ride)),
        Ok(Ok(None)) => not_found(),
        Ok(Err(ServiceError::GatewayUnavailable { .. } | ServiceError::DatabaseUnavailable(_))) => {
            confirming()
        }
        Ok(Err(err)) => {
            log::error!("the payment return page failed: {err}");
            confirming()
        }
        Err(_) => confirming(),
    }
}
