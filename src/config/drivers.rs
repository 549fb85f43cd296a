//! Drivers and their pay (`PLATFORM_*`).

use anyhow::bail;

use super::source::Source;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverSettings {
    /// The platform's country (ISO 3166-1 alpha-2): every driver's, since
    /// paying a driver elsewhere needs the gateway's cross-border terms.
    pub platform_country: String,
}

impl Default for DriverSettings {
    fn default() -> Self {
        DriverSettings {
            platform_country: "US".to_owned(),
        }
    }
}

impl DriverSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = DriverSettings::default();
        Ok(DriverSettings {
            platform_country: source.var("PLATFORM_COUNTRY", d.platform_country)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        let country = &self.platform_country;
        if country.len() != 2 || !country.bytes().all(|byte| byte.is_ascii_uppercase()) {
            bail!("PLATFORM_COUNTRY must be two capital letters (ISO 3166-1 alpha-2): {country:?}");
        }
        Ok(())
    }
}
