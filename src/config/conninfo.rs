//! A PostgreSQL connection string read by libpq itself (`PQconninfoParse`):
//! a URL (several hosts, `target_session_attrs` and any other query
//! parameter) or keyword/value pairs. ridepay's connections are libpq's, so
//! it accepts exactly what they accept, and masks what libpq calls secret.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;

/// A connection string libpq accepts, as its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conninfo {
    /// The options given, in libpq's order.
    options: Vec<ConnOption>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ConnOption {
    keyword: String,
    value: String,
    /// libpq shows it as `*` in a dialog (`password`, `sslpassword`).
    secret: bool,
}

/// Why libpq refused a connection string: its message, with whatever it
/// quotes of the string hidden unless it is a connection option's name or
/// a single character (some messages quote the whole URL, password and
/// all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Conninfo {
    pub fn parse(raw: &str) -> Result<Conninfo, Refused> {
        let raw = CString::new(raw).map_err(|_| Refused("holds a NUL character".to_owned()))?;
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: `raw` is a NUL-terminated string that outlives the call;
        // libpq returns an array it allocated (ended by a NULL keyword) or
        // NULL with an error message it allocated, each freed below by the
        // function libpq names for it.
        let parsed = unsafe { pq_sys::PQconninfoParse(raw.as_ptr(), &mut error) };
        if parsed.is_null() {
            let message = if error.is_null() {
                "cannot be read (out of memory)".to_owned()
            } else {
                // SAFETY: a non-NULL message is a NUL-terminated string.
                let message = unsafe { CStr::from_ptr(error) }
                    .to_string_lossy()
                    .into_owned();
                unsafe { pq_sys::PQfreemem(error.cast()) };
                unquoted(message.trim())
            };
            return Err(Refused(message));
        }
        let mut options = Vec::new();
        // SAFETY: `parsed` is libpq's array, read up to its NULL keyword
        // and freed once.
        unsafe {
            let mut option = parsed;
            while !(*option).keyword.is_null() {
                if !(*option).val.is_null() {
                    options.push(ConnOption {
                        keyword: text((*option).keyword),
                        value: text((*option).val),
                        secret: !(*option).dispchar.is_null() && text((*option).dispchar) == "*",
                    });
                }
                option = option.add(1);
            }
            pq_sys::PQconninfoFree(parsed);
        }
        Ok(Conninfo { options })
    }

    /// The value given for `keyword`, if one was.
    pub fn get(&self, keyword: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|option| option.keyword == keyword)
            .map(|option| option.value.as_str())
    }

    /// The options as keyword/value pairs, every secret as `***`.
    pub fn masked(&self) -> String {
        self.render(|option| if option.secret { "***" } else { &option.value })
    }

    /// The options as a keyword/value connection string, secrets included,
    /// with `keyword` set to `value` unless it was given.
    pub fn with_default(&self, keyword: &str, value: &str) -> String {
        let mut rendered = self.render(|option| &option.value);
        if self.get(keyword).is_none() {
            rendered.push_str(&format!(" {keyword}={}", quoted(value)));
        }
        rendered
    }

    fn render<'a>(&'a self, value: impl Fn(&'a ConnOption) -> &'a str) -> String {
        self.options
            .iter()
            .map(|option| format!("{}={}", option.keyword, quoted(value(option))))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A connection string as logs may show it: libpq's reading of it with
/// every secret masked, or a placeholder when libpq refuses it.
pub fn mask(raw: &str) -> String {
    Conninfo::parse(raw).map_or_else(|_| "<unreadable>".to_owned(), |info| info.masked())
}

/// # Safety
/// `text` is a NUL-terminated string.
unsafe fn text(text: *const c_char) -> String {
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// A value as keyword/value syntax needs it: quoted when empty or holding
/// a space, a quote or a backslash.
fn quoted(value: &str) -> String {
    if !value.is_empty() && !value.contains([' ', '\'', '\\']) {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// libpq's message with every quoted part that is neither a connection
/// option's name nor a single character replaced by `"..."`.
fn unquoted(message: &str) -> String {
    let keywords = keywords();
    let mut parts = message.split('"');
    let mut out = parts.next().unwrap_or_default().to_owned();
    let mut inside = true;
    for part in parts {
        let shown = part.chars().count() <= 1 || keywords.iter().any(|keyword| keyword == part);
        if inside && !shown {
            out.push_str("\"...");
        } else {
            out.push('"');
            out.push_str(part);
        }
        inside = !inside;
    }
    out
}

/// The names of every connection option this libpq knows.
fn keywords() -> Vec<String> {
    let mut keywords = Vec::new();
    // SAFETY: libpq's array of defaults, read up to its NULL keyword and
    // freed once.
    unsafe {
        let defaults = pq_sys::PQconndefaults();
        if defaults.is_null() {
            return keywords;
        }
        let mut option = defaults;
        while !(*option).keyword.is_null() {
            keywords.push(text((*option).keyword));
            option = option.add(1);
        }
        pq_sys::PQconninfoFree(defaults);
    }
    keywords
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_libpq_takes_is_read_and_its_secrets_masked() {
        let several = Conninfo::parse(
            "postgres://u:s3cret@10.0.0.1:5432,10.0.0.2:5433/ridepay\
             ?target_session_attrs=read-write&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(several.get("host"), Some("10.0.0.1,10.0.0.2"));
        assert_eq!(several.get("port"), Some("5432,5433"));
        assert_eq!(several.get("target_session_attrs"), Some("read-write"));
        assert_eq!(
            several.masked(),
            "user=u password=*** connect_timeout=3 dbname=ridepay host=10.0.0.1,10.0.0.2 \
             port=5432,5433 target_session_attrs=read-write"
        );
        let pairs = Conninfo::parse(
            "host=a,b port=5432,5432 dbname=ridepay password='it''s' \
             target_session_attrs=read-write",
        );
        // libpq escapes a quote with a backslash, not by doubling it.
        assert!(pairs.is_err(), "{pairs:?}");
        let pairs = Conninfo::parse(
            r"host=a,b port=5432,5432 dbname=ridepay password='it\'s secret' sslpassword=x",
        )
        .unwrap();
        assert_eq!(pairs.get("password"), Some("it's secret"));
        let masked = pairs.masked();
        assert!(
            !masked.contains("secret") && !masked.contains("=x"),
            "{masked}"
        );
        assert_eq!(
            Conninfo::parse(&masked).unwrap().get("host"),
            Some("a,b"),
            "the masked form reads back"
        );
        let named = Conninfo::parse(r"host=a password='it\'s secret'")
            .unwrap()
            .with_default("fallback_application_name", "ridepay");
        let named = Conninfo::parse(&named).unwrap();
        assert_eq!(named.get("password"), Some("it's secret"));
        assert_eq!(named.get("fallback_application_name"), Some("ridepay"));
        let in_query = mask("postgresql:///ridepay?host=/run/pg&password=hunter2");
        assert!(!in_query.contains("hunter2"), "{in_query}");
        assert!(in_query.contains("host=/run/pg"), "{in_query}");
    }

    #[test]
    fn a_refusal_says_why_and_quotes_no_value() {
        let refused = Conninfo::parse("host=a bogus=1").unwrap_err();
        assert_eq!(refused.0, "invalid connection option \"...\"");
        let refused = Conninfo::parse("host=a password").unwrap_err();
        assert!(refused.0.contains("\"=\" after \"password\""), "{refused}");
        // libpq quotes the whole URL here, password and all.
        let refused = Conninfo::parse("postgres://u:hunter2@[::1/db").unwrap_err();
        assert!(refused.0.contains("\"]\""), "{refused}");
        assert!(!refused.0.contains("hunter2"), "{refused}");
        assert_eq!(mask("postgres://u:hunter2@[::1/db"), "<unreadable>");
    }
}
