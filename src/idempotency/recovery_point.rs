//! Recovery points: how far an idempotent request has got. Each endpoint has its
//! own set; `started` and `finished` are shared by all.

use std::fmt::Debug;

pub const STARTED: &str = "started";
pub const FINISHED: &str = "finished";

/// An endpoint's recovery points, stored as text in `idempotency_keys`.
pub trait RecoveryPoints: Copy + Eq + Debug + Send + Sync + 'static {
    /// Where a brand-new key starts.
    const STARTED: Self;
    /// Where a key with a stored response ends.
    const FINISHED: Self;

    /// Every point, so a stored one can be read back.
    const ALL: &'static [Self];

    fn as_str(self) -> &'static str;

    fn parse(stored: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|point| point.as_str() == stored)
    }

    /// True while the endpoint's external effect (a charge, a refund) may
    /// still have to be made from this point.
    fn awaits_external_effect(self) -> bool;
}
