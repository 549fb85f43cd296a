//! The gateway doubles' onboarding page, as HTML, for both servers that
//! show it: what Stripe's hosted onboarding is to a driver, who says they
//! are done (the account can be paid) or leaves before the end, and goes
//! back to the platform's return page; a link used or expired sends them
//! to its refresh page instead, as Stripe's does.

use ridepay_gateway::html::{escape, page};

use super::return_url::valid_return_url;
use crate::accounts::Onboarding;

/// The answer to a link the double never made.
pub fn not_valid() -> String {
    page(
        "This onboarding link is not valid",
        "<p>Go back to the app for a new one.</p>",
    )
}

/// The answer while the doubles' store cannot be reached.
pub fn unavailable() -> String {
    page(
        "Onboarding cannot be reached just now",
        "<p>Reload this page in a moment.</p>",
    )
}

/// What the page asks the driver, with a form that posts the answer to
/// `action` (the page's own path).
pub fn question(onboarding: &Onboarding, link: &str, action: &str) -> String {
    let email = onboarding.email.as_deref().unwrap_or("your account");
    page(
        "Get paid by ridepay",
        &format!(
            "<p>Tell us who you are and where to send your pay, <strong id=\"email\">{}</strong>.</p>\n\
             <form method=\"post\" action=\"{action}\">\
             <input type=\"hidden\" name=\"link\" value=\"{}\">\
             <button id=\"complete\" name=\"outcome\" value=\"complete\">Submit</button> \
             <button id=\"incomplete\" name=\"outcome\" value=\"incomplete\">Finish later</button>\
             </form>",
            escape(email),
            escape(link)
        ),
    )
}

/// Where the browser goes next: the refresh page for a spent link, else the
/// return page; `None` when the link names no valid page.
pub fn next_location(onboarding: &Onboarding) -> Option<String> {
    let next = if onboarding.spent {
        &onboarding.refresh_url
    } else {
        &onboarding.return_url
    };
    valid_return_url(next).map(|url| url.to_string())
}

/// The origins the page's form may lead to, for its `form-action`.
pub fn return_origin(onboarding: &Onboarding) -> Option<String> {
    let url = valid_return_url(&onboarding.return_url)?;
    Some(url.origin().ascii_serialization())
}
