//! A call to the gateway as ridepay makes it: its idempotency key and the
//! metadata that names what it makes, both derived from what the client
//! sent; and what its answer means for the key that made it, the same for
//! every endpoint with an external effect.

use ridepay_gateway::{GatewayError, PaymentGateway, PaymentIntent};
use uuid::Uuid;

use super::released;
use crate::idempotency::GatewayCalls;
use crate::service_error::{unavailable, ServiceError};

/// The gateway idempotency key of the call named `step` (`ride-capture`) of
/// a key whose calls are made as `calls` says: stable across retries, from
/// any instance; unique across deployments sharing a gateway account (the
/// installation id is in the `ridepay_key`); well under Stripe's
/// 255-character limit. It depends on nothing the database assigns: a
/// retry that makes the key row again after a failover lost it derives the
/// same key, and the gateway answers with what it already made. `g0` is the
/// call's generation, the first; reconciliation moves a call whose answer
/// the gateway lost for ever on to `g1`, and so on. The prefix carries the
/// call version (`ridepay4-`): each version's calls send other parameters
/// than the version before's, so they are other calls.
pub fn gateway_key(calls: GatewayCalls, step: &str) -> String {
    format!(
        "ridepay{}-{step}-{}-g{}",
        calls.version,
        calls.from.to_hex(),
        calls.generation
    )
}

/// The metadata of a call that makes something at the gateway (a
/// PaymentIntent, a refund): the installation and the request
/// (`ridepay_key`), never a row, by which events and reconciliation find
/// the key.
pub fn call_metadata(installation_id: Uuid, calls: GatewayCalls) -> Vec<(String, String)> {
    [
        (INSTALLATION, installation_id.to_string()),
        (RIDEPAY_KEY, calls.from.to_hex()),
        (GENERATION, calls.generation.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// The metadata that names the installation and the request.
pub const INSTALLATION: &str = "ridepay_installation";
pub const RIDEPAY_KEY: &str = "ridepay_key";
pub const GENERATION: &str = "ridepay_generation";

/// A gateway call's final answer, which the endpoint's next atomic step
/// records with the key.
#[derive(Debug, Clone)]
pub enum Final<T> {
    /// What the call made.
    Made(T),
    /// A final refusal: a decline or a rejection.
    Refused(GatewayError),
}

/// Sorts a gateway call's answer for the flow: an final answer, or a 503
/// that leaves the key where it stands, for a retry under the same derived
/// key (or, after a failure the gateway saved under it, for
/// reconciliation).
pub fn final_answer<T>(answer: Result<T, GatewayError>) -> Result<Final<T>, ServiceError> {
    match answer {
        Ok(made) => Ok(Final::Made(made)),
        Err(failure @ (GatewayError::Declined { .. } | GatewayError::Rejected { .. })) => {
            Ok(Final::Refused(failure))
        }
        Err(GatewayError::SavedFailure { reason }) => {
            Err(ServiceError::AwaitingReconciliation { reason })
        }
        Err(failure) => Err(unavailable(failure)),
    }
}

/// A PaymentIntent create's answer, sorted as `final_answer` does. One the
/// gateway gave again from what it saved under the key (`replayed`) is read
/// again, as the PaymentIntent is now (`released`).
pub fn create_answer(
    gateway: &dyn PaymentGateway,
    answer: Result<PaymentIntent, GatewayError>,
) -> Result<Final<PaymentIntent>, ServiceError> {
    final_answer(match answer {
        Ok(intent) if intent.replayed => released::reread(gateway, intent),
        answer => answer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::RidepayKey;

    #[test]
    fn is_stable_and_distinct_by_version_step_and_generation() {
        let request = RidepayKey::parse(&"ab".repeat(32)).unwrap();
        let calls = GatewayCalls::first(request);
        let key = gateway_key(calls, "ride-charge");
        assert_eq!(key, format!("ridepay4-ride-charge-{}-g0", "ab".repeat(32)));
        assert_eq!(key, gateway_key(calls, "ride-charge"));
        assert_ne!(key, gateway_key(calls, "refund"));
        let version_2 = GatewayCalls {
            version: 2,
            ..calls
        };
        assert_eq!(
            gateway_key(version_2, "ride-charge"),
            format!("ridepay2-ride-charge-{}-g0", "ab".repeat(32))
        );
        assert_eq!(
            gateway_key(
                GatewayCalls {
                    generation: 1,
                    ..calls
                },
                "ride-charge"
            ),
            format!("ridepay4-ride-charge-{}-g1", "ab".repeat(32))
        );
        assert!(key.len() <= 255);
    }

    #[test]
    fn metadata_names_the_installation_and_the_request_and_no_row() {
        let request = RidepayKey::parse(&"cd".repeat(32)).unwrap();
        let calls = GatewayCalls {
            generation: 1,
            ..GatewayCalls::first(request)
        };
        let metadata = call_metadata(Uuid::from_u128(7), calls);
        let names: Vec<&str> = metadata.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["ridepay_installation", "ridepay_key", "ridepay_generation"]
        );
        assert_eq!(metadata[1].1, "cd".repeat(32));
        assert_eq!(metadata[2].1, "1");
    }
}
