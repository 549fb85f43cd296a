//! The recovery points of `POST /api/rides/{id}/tip`.

crate::recovery_points! {
    /// How far a tip has got. A retry (or the completer) resumes here. A
    /// tip on a held ride is written at once, from Started to Finished.
    pub enum RecoveryPoint for "rides.tip" {
        /// The captured ride is the key's to tip; the tip's PaymentIntent,
        /// off session, may or may not have been made (and, declined,
        /// cancelled).
        TipStarted = "tip_started", call "tip-payment";
    }
}
