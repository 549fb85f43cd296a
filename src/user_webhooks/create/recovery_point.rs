//! The recovery points of `POST /api/webhook_endpoints`.

crate::recovery_points! {
    /// How far a registration has got. A retry (or the completer) resumes
    /// here.
    pub enum RecoveryPoint for "webhook_endpoints.create" {
        /// The request is the key's; its host may or may not have been
        /// resolved and checked. Nothing is written before it is.
        DestinationNamed = "destination_named", call "check-destination";
    }
}
