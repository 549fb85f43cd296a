//! Answers for requests no route takes, and for extractor failures, all as
//! problems.

use actix_web::error::{PathError, QueryPayloadError};
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};

use crate::validation::FieldError;
use crate::wire::problem::{Problem, ProblemKind};

pub async fn not_found(request: HttpRequest) -> HttpResponse {
    Problem::new(
        ProblemKind::NotFound,
        format!("no route for {} {}", request.method(), request.path()),
    )
    .error_response()
}

/// The default route of a resource whose methods are `allow`.
pub fn method_not_allowed(allow: &'static str) -> actix_web::Route {
    web::route().to(move |request: HttpRequest| async move {
        Problem::new(
            ProblemKind::MethodNotAllowed,
            format!("{} is not allowed on {}", request.method(), request.path()),
        )
        .with_header("Allow", allow)
        .error_response()
    })
}

/// A resource answering GET (and HEAD), and 405 to every other method.
pub fn get_only<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(handler))
        .default_service(method_not_allowed("GET"))
}

/// A resource answering POST, and 405 to every other method.
pub fn post_only<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::post().to(handler))
        .default_service(method_not_allowed("POST"))
}

/// A page for anyone's browser: `GET` shows it, `POST` takes its answer,
/// 405 to any other method; limited per address like every route open to
/// anyone.
pub fn page<S, SArgs, A, AArgs>(
    path: &str,
    show: S,
    answer: A,
) -> impl actix_web::dev::HttpServiceFactory
where
    S: actix_web::Handler<SArgs>,
    SArgs: actix_web::FromRequest + 'static,
    S::Output: actix_web::Responder + 'static,
    A: actix_web::Handler<AArgs>,
    AArgs: actix_web::FromRequest + 'static,
    A::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(show))
        .route(web::post().to(answer))
        .default_service(method_not_allowed("GET, POST"))
        .wrap(actix_web::middleware::from_fn(
            super::rate_limit::per_address,
        ))
}

/// A page's form, read under the same size and time limits as every body:
/// the problem to answer when the body is refused, `None` when it is not
/// the form the page asks for.
pub async fn page_form<T: serde::de::DeserializeOwned>(
    request: &HttpRequest,
    payload: web::Payload,
) -> Result<Option<T>, HttpResponse> {
    use super::body::{read_body, FORM, MAX_BODY_BYTES};
    let form = read_body(request, payload, MAX_BODY_BYTES, FORM)
        .await
        .map_err(|problem| problem.error_response())?;
    Ok(serde_urlencoded::from_bytes(&form).ok())
}

/// A page for a rider's browser, never cached (it shows a payment's state),
/// with the headers every page has (`html::security_headers`).
pub fn html(status: actix_web::http::StatusCode, body: String) -> HttpResponse {
    html_posting_to(status, body, None)
}

/// A page whose form's answer redirects to `form_target` (an origin).
pub fn html_posting_to(
    status: actix_web::http::StatusCode,
    body: String,
    form_target: Option<&str>,
) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    response
        .content_type("text/html; charset=utf-8")
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"));
    for header in ridepay_gateway::html::security_headers(form_target) {
        response.insert_header(header);
    }
    response.body(body)
}

/// A path segment that does not parse (`/api/rides/abc`) names no resource.
pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err: PathError, request: &HttpRequest| {
        Problem::new(
            ProblemKind::NotFound,
            format!("no resource at {}: {err}", request.path()),
        )
        .into()
    })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err: QueryPayloadError, _| {
        Problem::invalid(vec![FieldError::new("query", err.to_string())]).into()
    })
}
