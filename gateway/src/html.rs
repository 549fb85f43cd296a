//! The small HTML pages riders' browsers see (ridepay's return page, the
//! doubles' authentication pages): one document shape, escaped text, and
//! money in the rider's words.

/// A page: a title and a body of HTML.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{title}</title></head>\n<body><main>\n<h1>{title}</h1>\n{body}\n</main></body></html>\n"
    )
}

/// The headers every page is sent with: it loads nothing (no script, style,
/// image or frame), is never framed (clickjacking), never sniffed as another
/// type, and never sends a `Referer` (its URL may carry a client secret). Its
/// forms post to its own origin and to `form_target`, the origin the answer
/// redirects to (browsers apply `form-action` to that redirect too).
pub fn security_headers(form_target: Option<&str>) -> [(&'static str, String); 4] {
    let form_action = match form_target {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_owned(),
    };
    [
        (
            "Content-Security-Policy",
            format!(
                "default-src 'none'; form-action {form_action}; frame-ancestors 'none'; \
                 base-uri 'none'"
            ),
        ),
        ("X-Frame-Options", "DENY".to_owned()),
        ("X-Content-Type-Options", "nosniff".to_owned()),
        ("Referrer-Policy", "no-referrer".to_owned()),
    ]
}

/// Text for HTML, attribute values included.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An amount of minor units as a rider reads it: `€18.00`, `$20.50`.
pub fn money(amount_cents: i64, currency: &str) -> String {
    let symbol = match currency {
        "usd" => "$",
        "eur" => "€",
        "gbp" => "£",
        other => {
            return format!(
                "{}.{:02} {}",
                amount_cents / 100,
                amount_cents % 100,
                other.to_uppercase()
            )
        }
    };
    format!("{symbol}{}.{:02}", amount_cents / 100, amount_cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_is_in_the_riders_words_and_text_is_escaped() {
        assert_eq!(money(1800, "eur"), "€18.00");
        assert_eq!(money(2050, "usd"), "$20.50");
        assert_eq!(money(5, "gbp"), "£0.05");
        assert_eq!(money(100, "chf"), "1.00 CHF");
        assert_eq!(
            escape(r#"<a href="x">&"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
