//! The recovery points of `POST /api/rides/{id}/refunds`.

use crate::idempotency::{self, RecoveryPoints};

/// How far a refund request has got. A retry (or the completer) resumes here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryPoint {
    /// The key is claimed; nothing else is written.
    Started,
    /// The refund exists, pending, its amount reserved on the ride; the
    /// gateway refund may or may not have been made.
    RefundCreated,
    /// The gateway refund is recorded; the response is not stored yet.
    RefundCompleted,
    /// The response is stored.
    Finished,
}

impl RecoveryPoints for RecoveryPoint {
    const STARTED: Self = RecoveryPoint::Started;
    const FINISHED: Self = RecoveryPoint::Finished;
    const ALL: &'static [Self] = &[
        RecoveryPoint::Started,
        RecoveryPoint::RefundCreated,
        RecoveryPoint::RefundCompleted,
        RecoveryPoint::Finished,
    ];

    fn as_str(self) -> &'static str {
        match self {
            RecoveryPoint::Started => idempotency::STARTED,
            RecoveryPoint::RefundCreated => "refund_created",
            RecoveryPoint::RefundCompleted => "refund_completed",
            RecoveryPoint::Finished => idempotency::FINISHED,
        }
    }

    /// The refund is made from RefundCreated; from RefundCompleted on it is
    /// recorded.
    fn awaits_external_effect(self) -> bool {
        matches!(self, RecoveryPoint::Started | RecoveryPoint::RefundCreated)
    }
}
