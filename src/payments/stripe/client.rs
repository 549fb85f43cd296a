//! The HTTP client: one form-encoded `POST /v1/charges` per charge, under the
//! caller's idempotency key, with bounded connect and overall timeouts.

use std::time::Duration;

use anyhow::Context;

use super::intents;
use super::outcome::{self, Answer};
use crate::config::{ApiKey, StripeSettings};
use crate::payments::gateway::{
    Charge, ChargeRequest, ChargeState, GatewayError, PaymentGateway, Refund, RefundRequest,
};
use crate::payments::{
    CancelIntent, CaptureIntent, CreateIntent, IncrementIntent, IntentGateway, PaymentIntent,
};

/// The API version every request names: pinned, so that a change of the
/// account's default version cannot change what the answers mean. It is
/// the version of the specification vendored in `tests/stripe/`, so what the
/// client sends and reads is what that specification describes, the one
/// parameter newer than it named (`intents::NEWER_PARAMETERS`); the client
/// also reads Stripe's current (2026) example objects, whose differences
/// from it the conformance test lists by name.
pub const STRIPE_VERSION: &str = "2023-08-16";

pub struct StripeGateway {
    agent: ureq::Agent,
    charges_url: String,
    refunds_url: String,
    intents_url: String,
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
        crate::outbound::check_url(&settings.api_base)
            .map_err(|problem| anyhow::anyhow!("STRIPE_API_BASE {problem}"))?;
        // Error answers carry Stripe's error object: read as answers.
        let agent = crate::outbound::agent(settings.connect_timeout, settings.timeout);
        let base = settings.api_base.trim_end_matches('/');
        Ok(StripeGateway {
            agent,
            charges_url: format!("{base}/v1/charges"),
            refunds_url: format!("{base}/v1/refunds"),
            intents_url: format!("{base}/v1/payment_intents"),
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
        form.extend(metadata_fields(&request.metadata));
        form
    }

    fn refund_form(request: &RefundRequest) -> Vec<(String, String)> {
        let mut form = vec![("charge".to_owned(), request.charge_id.clone())];
        form.extend(
            request
                .amount_cents
                .map(|amount| ("amount".to_owned(), amount.to_string())),
        );
        form.extend(
            request
                .reason
                .clone()
                .map(|reason| ("reason".to_owned(), reason)),
        );
        form.extend(metadata_fields(&request.metadata));
        form
    }

    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        request
            .header(
                "Authorization",
                &format!("Bearer {}", self.api_key.expose()),
            )
            .header("Stripe-Version", STRIPE_VERSION)
    }

    /// One form-encoded POST under `idempotency_key`, its 2xx body read by
    /// `accepted`; transient failures logged with the key.
    fn post<T>(
        &self,
        url: &str,
        idempotency_key: &str,
        form: Vec<(String, String)>,
        accepted: impl FnOnce(&[u8]) -> Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        let accepted = |answer: &Answer| outcome::classify(answer, accepted);
        let result = self
            .authorized(self.agent.post(url))
            .header("Idempotency-Key", idempotency_key)
            .send_form(form)
            .map_err(outcome::transport_failure)
            .and_then(|response| read_answer(response, accepted));
        // Declines, rejections and misconfigurations are logged where they are
        // handled; a transient failure is worth a line here, with its key.
        if let Err(err @ (GatewayError::Unavailable { .. } | GatewayError::OutcomeUnknown { .. })) =
            &result
        {
            log::warn!("Stripe call to {url} under key {idempotency_key} failed: {err}");
        }
        result
    }
}

/// `metadata[name]=value` fields.
pub(super) fn metadata_fields(
    metadata: &[(String, String)],
) -> impl Iterator<Item = (String, String)> + '_ {
    metadata
        .iter()
        .map(|(key, value)| (format!("metadata[{key}]"), value.clone()))
}

/// Reads an answer whole and says what it means.
fn read_answer<T>(
    mut response: ureq::http::Response<ureq::Body>,
    interpret: impl FnOnce(&Answer) -> Result<T, GatewayError>,
) -> Result<T, GatewayError> {
    let status = response.status().as_u16();
    let headers = response.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    let retry_after = header("retry-after")
        .and_then(|value| value.parse().ok())
        .map(Duration::from_secs);
    let should_retry = header("stripe-should-retry").map(|value| value == "true");
    let replayed = header("idempotent-replayed") == Some("true");
    // Stripe's id of the request, for its support and its dashboard's logs.
    let request_id = header("request-id").map(str::to_owned);
    let body = response
        .body_mut()
        .read_to_vec()
        .map_err(outcome::transport_failure)?;
    interpret(&Answer {
        status,
        retry_after,
        should_retry,
        replayed,
        request_id,
        body: &body,
    })
}

impl IntentGateway for StripeGateway {
    fn create_intent(&self, request: &CreateIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &self.intents_url,
            &request.idempotency_key,
            intents::create_form(request),
            intents::payment_intent,
        )
    }

    fn capture_intent(&self, request: &CaptureIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &format!("{}/{}/capture", self.intents_url, request.intent_id),
            &request.idempotency_key,
            intents::capture_form(request),
            intents::payment_intent,
        )
    }

    fn increment_intent(&self, request: &IncrementIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &format!(
                "{}/{}/increment_authorization",
                self.intents_url, request.intent_id
            ),
            &request.idempotency_key,
            intents::increment_form(request),
            intents::payment_intent,
        )
    }

    fn cancel_intent(&self, request: &CancelIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &format!("{}/{}/cancel", self.intents_url, request.intent_id),
            &request.idempotency_key,
            intents::cancel_form(request),
            intents::payment_intent,
        )
    }

    fn retrieve_intent(&self, id: &str) -> Result<Option<PaymentIntent>, GatewayError> {
        let url = format!("{}/{id}", self.intents_url);
        let response = self
            .authorized(self.agent.get(&url))
            .call()
            .map_err(outcome::transport_failure)?;
        read_answer(response, |answer| {
            if outcome::is_missing(answer) {
                return Ok(None);
            }
            outcome::classify(answer, intents::payment_intent).map(Some)
        })
    }
}

impl PaymentGateway for StripeGateway {
    fn charge(&self, request: &ChargeRequest) -> Result<Charge, GatewayError> {
        self.post(
            &self.charges_url,
            &request.idempotency_key,
            Self::form(request),
            outcome::charged,
        )
    }

    fn refund(&self, request: &RefundRequest) -> Result<Refund, GatewayError> {
        self.post(
            &self.refunds_url,
            &request.idempotency_key,
            Self::refund_form(request),
            outcome::refunded,
        )
    }

    fn retrieve_charge(&self, id: &str) -> Result<Option<ChargeState>, GatewayError> {
        // Since API version 2022-11-15 a charge lists its refunds only when
        // asked to.
        let url = format!("{}/{id}", self.charges_url);
        let response = self
            .authorized(self.agent.get(&url))
            .query("expand[]", "refunds")
            .call()
            .map_err(outcome::transport_failure)?;
        read_answer(response, |answer| {
            if outcome::is_missing(answer) {
                return Ok(None);
            }
            outcome::classify(answer, outcome::charge_state).map(Some)
        })
    }
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
