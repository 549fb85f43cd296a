//! The recovery points of `POST /api/rides`.

crate::recovery_points! {
    /// How far a ride request has got. A retry (or the completer) resumes here.
    pub enum RecoveryPoint for "rides.create" {
        /// The ride exists, pending; the charge may or may not have been made.
        RideCreated = "ride_created", call "charge";
        /// The charge is recorded on the ride; the response is not stored yet.
        ChargeCompleted = "charge_completed", atomic;
    }
}
