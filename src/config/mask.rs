//! URLs as logs may show them: every secret masked.

/// A URL with its password and every query value replaced by `***`: a
/// query may carry a secret too (`?password=`, `?token=`).
pub fn mask_url(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw) else {
        return "<unparsable>".to_owned();
    };
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    if url.query().is_some() {
        let names: Vec<String> = url
            .query_pairs()
            .map(|(name, _)| name.into_owned())
            .collect();
        url.query_pairs_mut()
            .clear()
            .extend_pairs(names.iter().map(|name| (name, "***")));
    }
    url.to_string()
}
