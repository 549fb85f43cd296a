//! The access log's line: the request line with every query value masked,
//! since queries carry secrets (the return page's and the simulated bank
//! page's client secrets).

use actix_web::dev::ServiceRequest;
use actix_web::middleware::Logger;

/// The access line is written after the response, outside the request's
/// scope, so it names the request id itself.
pub fn logger() -> Logger {
    Logger::new(r#"request_id=%{x-request-id}i %a "%{request_line}xi" %s %b %Dms"#)
        .custom_request_replace("request_line", request_line)
}

/// `GET /payments/return?payment_intent=***&payment_intent_client_secret=*** HTTP/1.1`
fn request_line(request: &ServiceRequest) -> String {
    let query = request.query_string();
    let masked = if query.is_empty() {
        String::new()
    } else {
        let names = query
            .split('&')
            .map(|pair| format!("{}=***", pair.split('=').next().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("&");
        format!("?{names}")
    };
    format!(
        "{} {}{masked} {:?}",
        request.method(),
        request.path(),
        request.version()
    )
}
