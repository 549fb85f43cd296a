//! What a reconciliation pass did, as `ridepay reconcile` prints it and
//! the metrics count it.

use serde::Serialize;

/// What a pass did (or, dry, would do), as `ridepay reconcile` prints it.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// PaymentIntents found recorded by their ride.
    pub matched: usize,
    /// Keys whose call the lists showed made: recorded.
    pub recorded: usize,
    /// Keys whose call the lists proved not made: sent again under the
    /// next generation's key.
    pub reissued: usize,
    /// Keys proven not made past the deadline: a stored 502.
    pub refused: usize,
    pub orphans_cancelled: usize,
    pub orphans_refunded: usize,
    /// Transfers to drivers no transfer records or would: tombstoned and
    /// posted against `platform:suspense`.
    pub strays_found: usize,
    /// Stray transfers reversed.
    pub strays_reversed: usize,
    /// Stray transfers whose reversal the driver's available balance could
    /// not cover: left in suspense for a later pass.
    pub strays_in_suspense: usize,
    /// Captures recorded without their fee whose fee the gateway's balance
    /// transactions gave: posted.
    pub fees_posted: usize,
    /// What reconciliation cannot repair: an operator looks (the log says
    /// which).
    pub needs_attention: usize,
    /// Keys whose lookup proved nothing this time, and releases whose
    /// answer was lost (the gateway failed or rate-limited them): the next
    /// pass tries again.
    pub unresolved: usize,
    /// Another instance's pass was running: this one did nothing.
    pub skipped: bool,
}

impl Summary {
    pub(super) fn count_release(&mut self, action: &str) {
        match action {
            "cancel" => self.orphans_cancelled += 1,
            _ => self.orphans_refunded += 1,
        }
    }

    pub(super) fn count(&self) {
        let metrics = &crate::telemetry::metrics::metrics().reconciliation;
        for (outcome, n) in [
            ("matched", self.matched),
            ("recorded", self.recorded),
            ("reissued", self.reissued),
            ("refused", self.refused),
            ("orphan_cancelled", self.orphans_cancelled),
            ("orphan_refunded", self.orphans_refunded),
            ("stray_found", self.strays_found),
            ("stray_reversed", self.strays_reversed),
            ("stray_in_suspense", self.strays_in_suspense),
            ("fee_posted", self.fees_posted),
            ("needs_attention", self.needs_attention),
            ("unresolved", self.unresolved),
        ] {
            metrics.with_label_values(&[outcome]).inc_by(n as u64);
        }
    }
}
