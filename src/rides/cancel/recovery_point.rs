//! The recovery points of `POST /api/rides/{id}/cancel`.

crate::recovery_points! {
    /// How far a cancellation has got. A retry (or the completer) resumes
    /// here.
    pub enum RecoveryPoint for "rides.cancel" {
        /// The ride is the key's to cancel; the PaymentIntent may or may not
        /// have been cancelled (or its fee captured).
        CancellationStarted = "cancellation_started", call "cancel";
    }
}
