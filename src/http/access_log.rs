//! The access log's line: the request line with every query value masked,
//! since queries carry secrets (the return page's and the simulated bank
//! page's client secrets), and so is a driver's onboarding token, which
//! their pages carry in the path.

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
        masked_path(request.path()),
        request.version()
    )
}

/// `/drivers/onboarding/***/start`; any other path as it is.
fn masked_path(path: &str) -> std::borrow::Cow<'_, str> {
    let token_and_page = path
        .strip_prefix(super::driver_pages::PATH)
        .and_then(|rest| rest.strip_prefix('/'));
    match token_and_page {
        Some(rest) => {
            let page = rest.split_once('/').map_or("", |(_, page)| page);
            format!("{}/***/{page}", super::driver_pages::PATH).into()
        }
        None => path.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::masked_path;

    #[test]
    fn a_drivers_token_is_masked_in_the_path() {
        let token = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            masked_path(&format!("/drivers/onboarding/{token}/return")),
            "/drivers/onboarding/***/return"
        );
        assert_eq!(
            masked_path(&format!("/drivers/onboarding/{token}")),
            "/drivers/onboarding/***/"
        );
        assert_eq!(masked_path("/api/drivers/drv_1"), "/api/drivers/drv_1");
    }
}
