//! The recovery points of `POST /api/rides`.

use crate::idempotency::{self, RecoveryPoints};

/// How far a ride request has got. A retry (or the completer) resumes here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryPoint {
    /// The key is claimed; nothing else is written.
    Started,
    /// The ride exists, pending; the charge may or may not have been made.
    RideCreated,
    /// The charge is recorded on the ride; the response is not stored yet.
    ChargeCompleted,
    /// The response is stored.
    Finished,
}

impl RecoveryPoints for RecoveryPoint {
    const STARTED: Self = RecoveryPoint::Started;
    const FINISHED: Self = RecoveryPoint::Finished;
    const ALL: &'static [Self] = &[
        RecoveryPoint::Started,
        RecoveryPoint::RideCreated,
        RecoveryPoint::ChargeCompleted,
        RecoveryPoint::Finished,
    ];

    fn as_str(self) -> &'static str {
        match self {
            RecoveryPoint::Started => idempotency::STARTED,
            RecoveryPoint::RideCreated => "ride_created",
            RecoveryPoint::ChargeCompleted => "charge_completed",
            RecoveryPoint::Finished => idempotency::FINISHED,
        }
    }

    /// The charge is made from RideCreated; from ChargeCompleted on it is
    /// recorded.
    fn awaits_external_effect(self) -> bool {
        matches!(self, RecoveryPoint::Started | RecoveryPoint::RideCreated)
    }
}
