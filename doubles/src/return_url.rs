//! What the doubles take as a PaymentIntent's `return_url`.

/// A `return_url` as Stripe takes one: an absolute `http(s)` URL with no
/// control characters (a URL parser drops CR and LF silently, and a
/// `Location` header would carry them).
pub fn valid_return_url(text: &str) -> Option<url::Url> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let url = url::Url::parse(text).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.has_host()).then_some(url)
}
