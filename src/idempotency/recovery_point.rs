//! Recovery points: how far an idempotent request has got. Each endpoint
//! declares its own with [`recovery_points!`](crate::recovery_points), once:
//! their names, the order they are reached in, and what runs from each;
//! `started` and `finished` are shared by all.

use std::fmt::Debug;

pub const STARTED: &str = "started";
pub const FINISHED: &str = "finished";

/// What runs from a recovery point, as the flow drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// An atomic step: database work only, in one transaction with the
    /// atomic steps right before and after it.
    Atomic,
    /// A call to the outside world (the gateway), named for its crash point
    /// (`after-<name>`), made holding no connection; then the atomic step
    /// from the same point records what it answered.
    Call(&'static str),
}

/// An endpoint's recovery points, stored as text in `idempotency_keys` beside
/// the endpoint's name (the pair is a row of `recovery_points`).
pub trait RecoveryPoints: Copy + Eq + Debug + Send + Sync + 'static {
    /// The endpoint's stable name (`rides.create`), stored with its keys.
    const ENDPOINT: &'static str;
    /// Where a brand-new key starts.
    const STARTED: Self;
    /// Where a key with a stored response ends.
    const FINISHED: Self;
    /// Every point, in the order a request reaches them.
    const ALL: &'static [Self];

    fn as_str(self) -> &'static str;

    /// What runs from this point (nothing runs from Finished).
    fn step(self) -> Step;

    fn parse(stored: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|point| point.as_str() == stored)
    }

    /// True while a call to the outside world may still have to be made
    /// from this point on: a key past the gateway's memory of its derived
    /// keys must then go to an operator, not be resumed.
    fn awaits_external_effect(self) -> bool {
        Self::ALL
            .iter()
            .skip_while(|point| **point != self)
            .any(|point| *point != Self::FINISHED && matches!(point.step(), Step::Call(_)))
    }
}

/// Declares an endpoint's recovery points: an enum with `Started`, the
/// endpoint's own points in the order they are reached, and `Finished`, and
/// its [`RecoveryPoints`] impl (`rides/create.rs` declares the ride's). Each
/// own point names what runs from it: `atomic`, or `call "name"` for a call
/// to the outside world. An endpoint written whole in the claim's
/// transaction has none.
#[macro_export]
macro_rules! recovery_points {
    (@step atomic) => { $crate::idempotency::Step::Atomic };
    (@step call $name:literal) => { $crate::idempotency::Step::Call($name) };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident for $endpoint:literal {
            $( $(#[$point_meta:meta])* $point:ident = $text:literal, $kind:ident $($call:literal)?; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            /// The key is claimed; nothing else is written.
            Started,
            $( $(#[$point_meta])* $point, )*
            /// The response is stored.
            Finished,
        }

        impl $crate::idempotency::RecoveryPoints for $name {
            const ENDPOINT: &'static str = $endpoint;
            const STARTED: Self = $name::Started;
            const FINISHED: Self = $name::Finished;
            const ALL: &'static [Self] = &[$name::Started, $($name::$point,)* $name::Finished];

            fn as_str(self) -> &'static str {
                match self {
                    $name::Started => $crate::idempotency::STARTED,
                    $( $name::$point => $text, )*
                    $name::Finished => $crate::idempotency::FINISHED,
                }
            }

            fn step(self) -> $crate::idempotency::Step {
                match self {
                    $name::Started | $name::Finished => $crate::idempotency::Step::Atomic,
                    $( $name::$point => $crate::recovery_points!(@step $kind $($call)?), )*
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::recovery_points! {
        enum Point for "tests.two_calls" {
            First = "first", call "one";
            Between = "between", atomic;
            Second = "second", call "two";
            Recorded = "recorded", atomic;
        }
    }

    #[test]
    fn a_point_awaits_an_effect_until_the_last_call_is_behind_it() {
        let awaiting: Vec<_> = Point::ALL
            .iter()
            .map(|point| (point.as_str(), point.awaits_external_effect()))
            .collect();
        assert_eq!(
            awaiting,
            [
                ("started", true),
                ("first", true),
                ("between", true),
                ("second", true),
                ("recorded", false),
                ("finished", false),
            ]
        );
        assert_eq!(Point::parse("second"), Some(Point::Second));
        assert_eq!(Point::Second.step(), Step::Call("two"));
        assert_eq!(Point::ENDPOINT, "tests.two_calls");
    }
}
