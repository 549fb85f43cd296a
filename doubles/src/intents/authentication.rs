//! The rider's authentication, on the page `next_action` sends them to.

use diesel::PgConnection;

use super::changes::read_and_change;
use super::clock::expiry;
use super::settings::IntentSettings;
use super::stored::random_id;
use super::stored::{read, StoredIntent};
use ridepay_gateway::{CaptureMethod, GatewayError, IntentStatus, PaymentIntent};

/// How the rider's authentication ended, on the authentication page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authentication {
    Completed,
    Failed,
}

/// A PaymentIntent as its authentication page sees it, and where the
/// rider goes back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticating {
    pub intent: PaymentIntent,
    pub return_url: Option<String>,
}

impl StoredIntent {
    pub(crate) fn authenticating(&self, settings: &IntentSettings) -> Authenticating {
        Authenticating {
            intent: self.intent(settings),
            return_url: self.return_url.clone(),
        }
    }

    /// The intent once the rider's authentication ended with `outcome`.
    pub(crate) fn authenticated(
        &self,
        outcome: Authentication,
        settings: &IntentSettings,
    ) -> StoredIntent {
        match outcome {
            Authentication::Completed if self.capture_method == CaptureMethod::Manual => {
                StoredIntent {
                    status: IntentStatus::RequiresCapture,
                    amount_capturable_cents: self.amount_cents,
                    authorization_expires_at: Some(expiry(settings, false)),
                    ..self.clone()
                }
            }
            Authentication::Completed => StoredIntent {
                status: IntentStatus::Succeeded,
                amount_received_cents: self.amount_cents,
                latest_charge: Some(random_id("ch_sim_")),
                ..self.clone()
            },
            Authentication::Failed => StoredIntent {
                status: IntentStatus::RequiresPaymentMethod,
                last_error_code: Some("payment_intent_authentication_failure".to_owned()),
                last_error_message: Some(
                    "The provided PaymentMethod has failed authentication.".to_owned(),
                ),
                ..self.clone()
            },
        }
    }
}

/// The intent the authentication page was opened for, when its client
/// secret matches; `None` otherwise, so the page reveals nothing.
pub fn authenticating(
    conn: &mut PgConnection,
    id: &str,
    client_secret: &str,
    settings: &IntentSettings,
) -> Result<Option<Authenticating>, GatewayError> {
    Ok(read_and_change(conn, id, read, |_| ())?
        .filter(|intent| intent.client_secret == client_secret)
        .map(|intent| intent.authenticating(settings)))
}

/// The rider authenticated (or failed to), on the page `next_action` sent
/// them to, which showed the intent's client secret. Once: an intent no
/// longer waiting is left as it is. `None` for an unknown intent or a secret
/// that does not match.
pub fn authenticate(
    conn: &mut PgConnection,
    id: &str,
    client_secret: &str,
    outcome: Authentication,
    settings: &IntentSettings,
) -> Result<Option<Authenticating>, GatewayError> {
    let shown = |intent: &StoredIntent| intent.client_secret == client_secret;
    let intent = read_and_change(conn, id, read, |change| {
        if shown(&change.intent) && change.intent.status == IntentStatus::RequiresAction {
            let authenticated = change.intent.authenticated(outcome, settings);
            change.becomes(authenticated);
        }
    })?;
    Ok(intent
        .filter(shown)
        .map(|intent| intent.authenticating(settings)))
}
