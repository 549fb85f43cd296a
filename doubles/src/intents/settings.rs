//! What the doubles need to answer like Stripe.

use std::time::Duration;

use crate::events::Double;

#[derive(Debug, Clone)]
pub struct IntentSettings {
    /// Which double answers: its records and events are its own.
    pub double: Double,
    /// The authentication page a `requires_action` sends the rider to.
    pub authentication_page: String,
    /// How long a hold lasts before it lapses.
    pub authorization_ttl: Duration,
    /// How long an extended hold lasts.
    pub extended_authorization_ttl: Duration,
}
