//! The gateway doubles' authentication page, as HTML, for both servers that
//! show it: ridepay (for the simulated gateway) and the fake Stripe. What a
//! bank's 3-D Secure page is to Stripe: the rider confirms or refuses, and
//! the browser goes back to where the payment was made.

use super::intents::Authenticating;
use super::return_url::valid_return_url;
use ridepay_gateway::html::{escape, money, page};
use ridepay_gateway::IntentStatus;

/// The answer to a link that names no intent, or the wrong secret.
pub fn not_valid() -> String {
    page(
        "This payment link is not valid",
        "<p>Nothing was charged. Go back to the app to try again.</p>",
    )
}

/// The answer while the doubles' store cannot be reached.
pub fn unavailable() -> String {
    page(
        "Your bank cannot be reached just now",
        "<p>Nothing was charged. Reload this page in a moment.</p>",
    )
}

/// What the bank asks the rider, with a form that posts the answer to
/// `action` (the page's own path).
pub fn question(found: &Authenticating, client_secret: &str, action: &str) -> String {
    let intent = &found.intent;
    let amount = money(intent.amount_cents, &intent.currency);
    page(
        "Confirm your payment",
        &format!(
            "<p>Your bank asks you to confirm a payment of <strong id=\"amount\">{amount}</strong> \
             to ridepay.</p>\n\
             <form method=\"post\" action=\"{action}\">\
             <input type=\"hidden\" name=\"payment_intent\" value=\"{}\">\
             <input type=\"hidden\" name=\"client_secret\" value=\"{}\">\
             <button id=\"complete\" name=\"outcome\" value=\"complete\">Confirm</button> \
             <button id=\"fail\" name=\"outcome\" value=\"fail\">Refuse</button></form>",
            escape(&intent.id),
            escape(client_secret)
        ),
    )
}

/// The origin the answer sends the browser to, for the page's
/// `form-action`.
pub fn return_origin(found: &Authenticating) -> Option<String> {
    let url = valid_return_url(found.return_url.as_deref()?)?;
    Some(url.origin().ascii_serialization())
}

/// Where the browser goes after the answer, as Stripe sends it back
/// (`payment_intent`, `payment_intent_client_secret`, `redirect_status`),
/// built from the parsed URL, so the header holds only what a URL may;
/// `None` when the payment named no valid return page.
pub fn return_location(found: &Authenticating, client_secret: &str) -> Option<String> {
    let mut url = valid_return_url(found.return_url.as_deref()?)?;
    let redirect_status = match found.intent.status {
        IntentStatus::RequiresPaymentMethod => "failed",
        IntentStatus::Processing => "processing",
        _ => "succeeded",
    };
    url.query_pairs_mut()
        .append_pair("payment_intent", &found.intent.id)
        .append_pair("payment_intent_client_secret", client_secret)
        .append_pair("redirect_status", redirect_status);
    Some(url.into())
}

/// The page after an answer with nowhere to go back to.
pub fn thanks() -> String {
    page("Thank you", "<p>You can go back to the app.</p>")
}
