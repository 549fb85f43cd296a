//! The recovery points of `POST /api/rides`.

crate::recovery_points! {
    /// How far a ride request has got. A retry (or the completer) resumes here.
    pub enum RecoveryPoint for "rides.create" {
        /// The ride exists, pending; the PaymentIntent may or may not have
        /// been made (the call keeps its Rocket Rides name, `charge`).
        RideCreated = "ride_created", call "charge";
        /// The gateway's answer is recorded on the ride; the response is not
        /// stored yet.
        ChargeCompleted = "charge_completed", atomic;
    }
}
