//! Where settings are read from: the process environment (with `.env`
//! loaded into it), or, for the check that `.env.example` states the
//! defaults, that file's lines.

use std::env;
use std::str::FromStr;
use std::time::Duration;

use anyhow::bail;

pub struct Source<'a> {
    lookup: &'a dyn Fn(&str) -> anyhow::Result<Option<String>>,
}

fn from_environment(name: &str) -> anyhow::Result<Option<String>> {
    match env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(env::VarError::NotPresent) => Ok(None),
        Err(env::VarError::NotUnicode(_)) => bail!("{name} is not valid UTF-8"),
    }
}

impl<'a> Source<'a> {
    pub fn environment() -> Source<'static> {
        Source {
            lookup: &from_environment,
        }
    }

    #[cfg(test)]
    pub fn new(lookup: &'a dyn Fn(&str) -> anyhow::Result<Option<String>>) -> Self {
        Source { lookup }
    }

    /// The variable, trimmed; None when unset or blank.
    pub fn text(&self, name: &str) -> anyhow::Result<Option<String>> {
        Ok((self.lookup)(name)?
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty()))
    }

    /// The variable parsed, or `default` when unset or blank.
    pub fn var<T>(&self, name: &str, default: T) -> anyhow::Result<T>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        match self.text(name)? {
            Some(value) => value
                .parse()
                .map_err(|err| anyhow::anyhow!("{name}={value:?} is invalid: {err}")),
            None => Ok(default),
        }
    }

    /// `on` or `off` (`true` and `false` too), or `default` when unset.
    pub fn switch(&self, name: &str, default: bool) -> anyhow::Result<bool> {
        match self.text(name)?.as_deref() {
            None => Ok(default),
            Some("on" | "true") => Ok(true),
            Some("off" | "false") => Ok(false),
            Some(other) => bail!("{name}={other:?} is invalid: give on or off"),
        }
    }

    pub fn millis(&self, name: &str, default: Duration) -> anyhow::Result<Duration> {
        Ok(Duration::from_millis(
            self.var(name, default.as_millis() as u64)?,
        ))
    }

    pub fn secs(&self, name: &str, default: Duration) -> anyhow::Result<Duration> {
        Ok(Duration::from_secs(self.var(name, default.as_secs())?))
    }

    pub fn hours(&self, name: &str, default: Duration) -> anyhow::Result<Duration> {
        self.whole(name, default, 3600)
    }

    pub fn days(&self, name: &str, default: Duration) -> anyhow::Result<Duration> {
        self.whole(name, default, 24 * 3600)
    }

    /// A duration given in whole units of `unit_secs`.
    fn whole(&self, name: &str, default: Duration, unit_secs: u64) -> anyhow::Result<Duration> {
        Ok(Duration::from_secs(
            self.var::<u64>(name, default.as_secs() / unit_secs)? * unit_secs,
        ))
    }

    /// A share of calls, between 0 and 1 (default 0): the doubles' faults.
    #[cfg(feature = "simulated")]
    pub fn rate(&self, name: &str) -> anyhow::Result<f64> {
        let rate: f64 = self.var(name, 0.0)?;
        anyhow::Context::with_context(check_rate(rate), || format!("{name} is invalid"))
    }
}

/// A share of calls (the doubles' faults): between 0 and 1.
#[cfg(feature = "simulated")]
pub fn check_rate(rate: f64) -> anyhow::Result<f64> {
    if !(0.0..=1.0).contains(&rate) {
        bail!("must be between 0 and 1, not {rate}");
    }
    Ok(rate)
}
