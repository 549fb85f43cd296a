//! The driver's onboarding pages, `/drivers/onboarding/{token}/start`,
//! `/refresh` and `/return`: what `onboarding_url` opens. No API key: the
//! token (128 random bits) guards them; rate-limited per address like every
//! route open to anyone. `start` and `refresh` send the driver to the
//! gateway's onboarding with a link made as they open it; `return` says, in
//! the driver's words, whether they can be paid, as the gateway says now.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse};

use super::rate_limit;
use super::request_id;
use super::routing::{get_only, html};
use crate::context::ServiceContext;
use crate::drivers::model::{Driver, DriverStatus};
use crate::drivers::pages::{self, Opened};
use crate::service_error::ServiceError;
use ridepay_gateway::html::{escape, page};

/// Where the pages are, under `PUBLIC_BASE_URL`.
pub const PATH: &str = "/drivers/onboarding";

/// How long a driver should wait before reloading while the gateway cannot
/// be asked.
const RETRY_AFTER: Duration = Duration::from_secs(5);

pub fn routes(config: &mut web::ServiceConfig) {
    for name in [pages::START, pages::REFRESH] {
        config.service(
            get_only(&format!("{PATH}/{{token}}/{name}"), open)
                .wrap(from_fn(rate_limit::per_address)),
        );
    }
    config.service(
        get_only(&format!("{PATH}/{{token}}/{}", pages::RETURN), returned)
            .wrap(from_fn(rate_limit::per_address)),
    );
}

fn not_found() -> HttpResponse {
    html(
        StatusCode::NOT_FOUND,
        page(
            "This link has ended",
            "<p>This onboarding link is not valid any more. Ask the platform for a new \
             one.</p>",
        ),
    )
}

fn wait(status: StatusCode, title: &str, text: &str, retry_after: Duration) -> HttpResponse {
    let mut response = html(status, page(title, &format!("<p>{text}</p>")));
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from(retry_after.as_secs()),
    );
    response
}

fn unavailable() -> HttpResponse {
    wait(
        StatusCode::SERVICE_UNAVAILABLE,
        "Please try again in a moment",
        "We could not reach the payment provider. Nothing has changed. Reload this page \
         in a moment.",
        RETRY_AFTER,
    )
}

/// `GET .../start` and `.../refresh`: on to the gateway's onboarding.
pub async fn open(token: web::Path<String>, context: web::Data<ServiceContext>) -> HttpResponse {
    let token = token.into_inner();
    if !pages::is_token(&token) {
        return not_found();
    }
    match request_id::block(move || pages::open(&context, &token)).await {
        Ok(Ok(Some(Opened::Link(link)))) => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, link.url))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .insert_header(("Referrer-Policy", "no-referrer"))
            .finish(),
        Ok(Ok(Some(Opened::TooSoon(retry_after)))) => wait(
            StatusCode::TOO_MANY_REQUESTS,
            "Please wait a minute",
            "A link to the payment provider was made for you less than a minute ago. \
             Reload this page in a minute.",
            retry_after,
        ),
        Ok(Ok(None)) => not_found(),
        Ok(Err(err)) => failed(err),
        Err(_) => unavailable(),
    }
}

/// `GET .../return`: where the gateway sends the driver back.
pub async fn returned(
    token: web::Path<String>,
    context: web::Data<ServiceContext>,
) -> HttpResponse {
    let token = token.into_inner();
    if !pages::is_token(&token) {
        return not_found();
    }
    let start = pages::page_url(&context.drivers.pages, &token, pages::START);
    match request_id::block(move || pages::returned(&context, &token)).await {
        Ok(Ok(Some(driver))) => html(StatusCode::OK, outcome(&driver, &start)),
        Ok(Ok(None)) => not_found(),
        Ok(Err(err)) => failed(err),
        Err(_) => unavailable(),
    }
}

fn failed(err: ServiceError) -> HttpResponse {
    if !matches!(
        err,
        ServiceError::GatewayUnavailable { .. } | ServiceError::DatabaseUnavailable(_)
    ) {
        log::error!("a driver's onboarding page failed: {err}");
    }
    unavailable()
}

/// Where the driver stands, in their words.
fn outcome(driver: &Driver, start: &str) -> String {
    let (title, text, more) = match driver.status {
        DriverStatus::Active => (
            "You can be paid",
            "You are all set: your earnings will be sent to your account. You can close \
             this page.",
            false,
        ),
        DriverStatus::Onboarding => (
            "Almost there",
            "The payment provider needs a few more details before you can be paid.",
            true,
        ),
        DriverStatus::Restricted => (
            "Your payouts are paused",
            "The payment provider needs more information before it can send you your \
             earnings again.",
            true,
        ),
    };
    let more = match more {
        true => format!(
            "<p><a id=\"continue\" href=\"{}\">Continue with the payment provider</a></p>",
            escape(start)
        ),
        false => String::new(),
    };
    page(
        title,
        &format!(
            "<div id=\"outcome\" data-status=\"{}\"><p>{text}</p>{more}</div>",
            driver.status
        ),
    )
}
