//! The recovery points of `POST /api/rides/{id}/refunds`.

crate::recovery_points! {
    /// How far a refund request has got. A retry (or the completer) resumes
    /// here.
    pub enum RecoveryPoint for "refunds.create" {
        /// The refund exists, pending, its amount reserved on the ride; the
        /// gateway refund may or may not have been made.
        RefundCreated = "refund_created", call "refund";
        /// The first part of a refund split between the fare and the tip
        /// is recorded; the second, of the tip's PaymentIntent, may or may
        /// not have been made.
        FarePartRefunded = "fare_part_refunded", call "refund-tip-part";
        /// The gateway refund is recorded; the response is not stored yet.
        RefundCompleted = "refund_completed", atomic;
    }
}
