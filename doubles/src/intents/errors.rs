//! The refusals and failures the doubles answer with, in Stripe's words.

use diesel::{Connection, PgConnection};
use ridepay_gateway::{GatewayError, IntentStatus};

use super::cards::DECLINE_MESSAGE;

pub(crate) fn storage(err: diesel::result::Error) -> GatewayError {
    GatewayError::Unavailable {
        reason: format!("simulated gateway storage: {err}"),
        retry_after: None,
    }
}

pub(crate) fn contended(id: &str) -> GatewayError {
    GatewayError::Unavailable {
        reason: format!("simulated gateway: {id} changed under every attempt"),
        retry_after: None,
    }
}

pub(crate) fn no_such_intent(id: &str) -> GatewayError {
    GatewayError::Rejected {
        message: format!("resource_missing: No such payment_intent: '{id}'"),
    }
}

pub(crate) fn unexpected_state(status: IntentStatus, action: &str) -> GatewayError {
    GatewayError::Rejected {
        message: format!(
            "payment_intent_unexpected_state: You cannot {action} this PaymentIntent because it \
             has a status of {status}."
        ),
    }
}

pub(crate) fn declined(decline_code: &str, intent_id: &str) -> GatewayError {
    GatewayError::Declined {
        code: "card_declined".to_owned(),
        decline_code: Some(decline_code.to_owned()),
        message: DECLINE_MESSAGE.to_owned(),
        payment_intent: Some(intent_id.to_owned()),
    }
}

/// A transaction of the doubles: `work`'s error rolls it back and is
/// returned as it is.
pub(crate) fn transaction<T>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut PgConnection) -> Result<T, GatewayError>,
) -> Result<T, GatewayError> {
    enum Failure {
        Gateway(GatewayError),
        Storage(diesel::result::Error),
    }
    impl From<diesel::result::Error> for Failure {
        fn from(err: diesel::result::Error) -> Self {
            Failure::Storage(err)
        }
    }
    conn.transaction(|conn| work(conn).map_err(Failure::Gateway))
        .map_err(|failure| match failure {
            Failure::Gateway(err) => err,
            Failure::Storage(err) => storage(err),
        })
}
