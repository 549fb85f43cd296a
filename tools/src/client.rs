//! The HTTP client of one virtual user: one keep-alive connection, the
//! requests of ridepay's rides API, and answers read whole.

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::json;

pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A ride request body: `automatic` capture pays at once (a paid ride ends
/// `captured`), `manual` holds the fare (`authorized`) until the ride is
/// completed or cancelled. Shared, not copied, by every request that sends
/// it.
pub fn ride_body(amount_cents: i64, payment_method: Option<&str>, capture_method: &str) -> Bytes {
    let mut body = json!({
        "origin_lat": 37.77, "origin_lon": -122.42,
        "target_lat": 37.80, "target_lon": -122.27,
        "amount_cents": amount_cents, "capture_method": capture_method
    });
    if let Some(payment_method) = payment_method {
        body["payment_method"] = json!(payment_method);
    }
    Bytes::from(body.to_string())
}

#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub replayed: bool,
}

impl Answer {
    /// The `type` slug of a problem+json answer (`idempotency-key-in-use`).
    pub fn problem_slug(&self) -> Option<String> {
        Some(self.text("type")?.rsplit('/').next()?.to_owned())
    }

    /// A text field of a JSON answer (a ride's `status`).
    pub fn text(&self, field: &str) -> Option<String> {
        Some(self.json()?.get(field)?.as_str()?.to_owned())
    }

    /// The ride an answer names: the `id` of a ride JSON answer, or the
    /// `ride_id` of a problem about one (a decline's). An opaque string
    /// (`ride_...`), taken as given, for paths and for the audit.
    pub fn ride_id(&self) -> Option<String> {
        let value = self.json()?;
        let id = value.get("id").or_else(|| value.get("ride_id"))?;
        Some(id.as_str()?.to_owned())
    }

    /// The id of a ride JSON answer as a path names the ride: the string
    /// as given (`ride_...`), or the integer a server from before public
    /// ids answers (the release before, which the benchmark may measure
    /// beside this one: `--baseline-bin`).
    pub fn ride_path_id(&self) -> Option<String> {
        match self.json()?.get("id")? {
            serde_json::Value::String(id) => Some(id.clone()),
            serde_json::Value::Number(id) => Some(id.to_string()),
            _ => None,
        }
    }

    /// Whether this is a driver's return page saying they can be paid.
    pub fn says_driver_active(&self) -> bool {
        self.status == 200 && String::from_utf8_lossy(&self.body).contains("data-status=\"active\"")
    }

    fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A driver as `POST /api/drivers` answered them.
pub struct RegisteredDriver {
    /// As the API gave it (`drv_...`).
    pub id: String,
    /// Their connected account at the gateway.
    pub account: String,
    /// Their return page's path (`/drivers/onboarding/{token}/return`),
    /// which any instance serves: opened, ridepay reads their account from
    /// the gateway, as it does when the driver comes back from onboarding.
    pub return_path: String,
}

impl RegisteredDriver {
    pub fn from_answer(registered: &Answer) -> anyhow::Result<RegisteredDriver> {
        if registered.status != 201 {
            anyhow::bail!("registering a driver: {}", registered.status);
        }
        let text = |field: &str| {
            registered
                .text(field)
                .with_context(|| format!("a registered driver without {field}"))
        };
        let onboarding = text("onboarding_url")?;
        let pages = onboarding
            .find("/drivers/onboarding/")
            .with_context(|| format!("an onboarding URL off the driver's pages: {onboarding}"))?;
        Ok(RegisteredDriver {
            id: text("id")?,
            account: text("account_id")?,
            return_path: onboarding[pages..].replace("/start", "/return"),
        })
    }
}

/// The load generator shares the server's two cores, so what a request costs
/// it to build counts against the server: the headers that never change are
/// built once.
pub struct RideClient {
    http: reqwest::Client,
    authorization: HeaderValue,
}

impl RideClient {
    /// A client whose pool keeps a single idle connection, so a virtual user
    /// sending one request at a time holds exactly one connection.
    pub fn new(api_key: &str, timeout: Duration) -> anyhow::Result<RideClient> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .context("cannot build the HTTP client")?;
        let mut authorization = HeaderValue::try_from(format!("Bearer {api_key}"))
            .context("an API key must fit in a header")?;
        authorization.set_sensitive(true);
        Ok(RideClient {
            http,
            authorization,
        })
    }

    /// `POST /api/rides` on `address` (`host:port`).
    pub async fn post_ride(
        &self,
        address: &str,
        key: &str,
        body: Bytes,
    ) -> reqwest::Result<Answer> {
        self.post(address, "/api/rides", key, body).await
    }

    /// An idempotent `POST` of a JSON body to `path` on `address`.
    pub async fn post(
        &self,
        address: &str,
        path: &str,
        key: &str,
        body: Bytes,
    ) -> reqwest::Result<Answer> {
        let response = self
            .http
            .post(format!("http://{address}{path}"))
            .header(AUTHORIZATION, self.authorization.clone())
            .header(IDEMPOTENCY_KEY, key)
            .header(CONTENT_TYPE, JSON)
            .body(body)
            .send()
            .await?;
        read(response).await
    }

    /// `GET /api/rides/{id}`, `id` as an answer gave it (`ride_...`).
    pub async fn get_ride(&self, address: &str, id: &str) -> reqwest::Result<Answer> {
        self.get(address, &format!("/api/rides/{id}")).await
    }

    /// `GET` of `path` on `address`, with the key.
    pub async fn get(&self, address: &str, path: &str) -> reqwest::Result<Answer> {
        let response = self
            .http
            .get(format!("http://{address}{path}"))
            .header(AUTHORIZATION, self.authorization.clone())
            .send()
            .await?;
        read(response).await
    }
}

async fn read(response: reqwest::Response) -> reqwest::Result<Answer> {
    let status = response.status().as_u16();
    let replayed = response
        .headers()
        .get(IDEMPOTENT_REPLAYED)
        .is_some_and(|value| value.as_bytes() == b"true");
    let body = response.bytes().await?.to_vec();
    Ok(Answer {
        status,
        body,
        replayed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> Answer {
        Answer {
            status: 201,
            body: body.as_bytes().to_vec(),
            replayed: false,
        }
    }

    #[test]
    fn a_ride_is_named_by_its_string_id_or_a_problems_ride_id() {
        let id = "ride_k5qx3bmfzq2wj7hvnyt4cdlrpeaq";
        let ride = answer(&json!({ "id": id, "status": "authorized" }).to_string());
        assert_eq!(ride.ride_id().as_deref(), Some(id));
        let declined =
            answer(&json!({ "type": "/problems/card-declined", "ride_id": id }).to_string());
        assert_eq!(declined.ride_id().as_deref(), Some(id));
        // An integer is no id the API gives now.
        assert_eq!(answer(r#"{"id":7}"#).ride_id(), None);
    }

    #[test]
    fn a_path_names_a_ride_by_its_id_or_a_release_befores_integer() {
        let id = "ride_k5qx3bmfzq2wj7hvnyt4cdlrpeaq";
        let ride = answer(&json!({ "id": id }).to_string());
        assert_eq!(ride.ride_path_id().as_deref(), Some(id));
        assert_eq!(answer(r#"{"id":7}"#).ride_path_id().as_deref(), Some("7"));
        assert_eq!(answer(r#"{"id":null}"#).ride_path_id(), None);
    }
}
