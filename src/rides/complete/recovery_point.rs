//! The recovery points of `POST /api/rides/{id}/complete`.

crate::recovery_points! {
    /// How far a completion has got. A retry (or the completer) resumes here.
    pub enum RecoveryPoint for "rides.complete" {
        /// The ride is the key's to complete; the hold may or may not have
        /// been raised to the final fare. A hold that covered the fare
        /// needed no raising, and its key stays here through the capture.
        CompletionStarted = "completion_started", call "increment";
        /// The hold covers the final fare; the capture may or may not have
        /// been made.
        HoldCovers = "hold_covers", call "capture";
    }
}
