//! The HTTP client: one form-encoded `POST /v1/charges` per charge, under the
//! caller's idempotency key, with bounded connect and overall timeouts.

use std::time::Duration;

use anyhow::Context;
use ureq::http::HeaderMap;

use super::outcome::{self, Answer};
use crate::config::{ApiKey, StripeSettings};
use crate::payments::gateway::{Charge, ChargeRequest, GatewayError, PaymentGateway};

/// The API version this client was written against: pinned, so that a change
/// of the account's default version cannot change what the answers mean.
pub const STRIPE_VERSION: &str = "2024-06-20";

pub struct StripeGateway {
    agent: ureq::Agent,
    charges_url: String,
    api_key: ApiKey,
}

impl std::fmt::Debug for StripeGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeGateway")
            .field("charges_url", &self.charges_url)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl StripeGateway {
    pub fn new(settings: &StripeSettings) -> anyhow::Result<StripeGateway> {
        let api_key = settings
            .api_key
            .clone()
            .context("GATEWAY=stripe needs STRIPE_API_KEY")?;
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(settings.connect_timeout))
            .timeout_global(Some(settings.timeout))
            // Error answers carry Stripe's error object; read them as answers.
            .http_status_as_error(false)
            .user_agent(concat!("ridepay/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(StripeGateway {
            agent,
            charges_url: format!("{}/v1/charges", settings.api_base.trim_end_matches('/')),
            api_key,
        })
    }

    fn form(request: &ChargeRequest) -> Vec<(String, String)> {
        let source_field = if request.source.starts_with("cus_") {
            "customer"
        } else {
            "source"
        };
        let mut form = vec![
            ("amount".to_owned(), request.amount_cents.to_string()),
            ("currency".to_owned(), request.currency.clone()),
            (source_field.to_owned(), request.source.clone()),
            ("description".to_owned(), request.description.clone()),
        ];
        form.extend(
            request
                .metadata
                .iter()
                .map(|(key, value)| (format!("metadata[{key}]"), value.clone())),
        );
        form
    }

    fn post_charge(&self, request: &ChargeRequest) -> Result<Charge, GatewayError> {
        let mut response = self
            .agent
            .post(&self.charges_url)
            .header(
                "Authorization",
                &format!("Bearer {}", self.api_key.expose()),
            )
            .header("Stripe-Version", STRIPE_VERSION)
            .header("Idempotency-Key", &request.idempotency_key)
            .send_form(Self::form(request))
            .map_err(outcome::transport_failure)?;
        let status = response.status().as_u16();
        let (retry_after, should_retry) = retry_hints(response.headers());
        let body = response
            .body_mut()
            .read_to_vec()
            .map_err(outcome::transport_failure)?;
        outcome::classify(&Answer {
            status,
            retry_after,
            should_retry,
            body: &body,
        })
    }
}

impl PaymentGateway for StripeGateway {
    fn charge(&self, request: &ChargeRequest) -> Result<Charge, GatewayError> {
        let result = self.post_charge(request);
        // Declines, rejections and misconfigurations are logged where they are
        // handled; a transient failure is worth a line here, with its key.
        if let Err(err @ (GatewayError::Unavailable { .. } | GatewayError::OutcomeUnknown { .. })) =
            &result
        {
            log::warn!(
                "Stripe charge under key {} failed: {err}",
                request.idempotency_key
            );
        }
        result
    }
}

fn retry_hints(headers: &HeaderMap) -> (Option<Duration>, Option<bool>) {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let retry_after = header("retry-after")
        .and_then(|value| value.trim().parse().ok())
        .map(Duration::from_secs);
    let should_retry = header("stripe-should-retry").map(|value| value.trim() == "true");
    (retry_after, should_retry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_api_key() {
        let gateway = StripeGateway::new(&StripeSettings {
            api_key: Some(ApiKey::new("sk_live_TopSecret123")),
            ..StripeSettings::default()
        })
        .unwrap();
        let shown = format!("{gateway:?}");
        assert!(!shown.contains("TopSecret"), "{shown}");
        assert!(
            shown.contains("https://api.stripe.com/v1/charges"),
            "{shown}"
        );
    }

    #[test]
    fn customers_and_tokens_go_in_their_own_fields_with_the_metadata() {
        let form = StripeGateway::form(&ChargeRequest {
            idempotency_key: "k".to_owned(),
            amount_cents: 2000,
            currency: "usd".to_owned(),
            source: "cus_1".to_owned(),
            description: "ride 1".to_owned(),
            metadata: vec![("ride_id".to_owned(), "1".to_owned())],
        });
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("amount", "2000"),
                ("currency", "usd"),
                ("customer", "cus_1"),
                ("description", "ride 1"),
                ("metadata[ride_id]", "1"),
            ]
        );
    }
}
