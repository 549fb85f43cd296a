//! A client's ride from request to end: asked for, then, held, sometimes
//! tipped and completed (the final fare up to 30% off the upfront one
//! either way) or cancelled (maybe with a fee); paid at once on the saved
//! card, sometimes tipped after; and what was captured sometimes partly
//! refunded, across fare and tip. Some rides are given a driver by the
//! platform, while held or once paid, before any refund. Each step under a
//! key of its own; a client that learns no answer leaves the ride as it
//! is, to the completer.

use rand::Rng;
use serde_json::Value;

use super::drivers::Drivers;
use super::history::{Expected, KeyHistory, Request};
use super::retrying_client::Sender;
use crate::client::Answer;

/// How long a client waits for a driver to be paid before a refund.
const PAID_POLLS: u32 = 25;
const PAID_POLL_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);
/// The bounds ridepay sets on a fare.
const FARE_CENTS: std::ops::RangeInclusive<i64> = 50..=1_000_000;
const FARE_SWING: f64 = 0.3;

/// The platform's side of a client's rides: its key, and the drivers.
pub struct Platform<'a> {
    pub sender: Sender<'a>,
    pub drivers: &'a Drivers,
}

/// When a ride is given its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Assigned {
    /// While the fare is held (for a ride paid at once, as for `Paid`).
    Held,
    /// Once its money is captured, tip included.
    Paid,
}

/// Runs one virtual client until the campaign's time or request budget is
/// spent, and returns the history of its keys (the platform's among them).
pub async fn run_client(
    sender: Sender<'_>,
    platform: Platform<'_>,
) -> anyhow::Result<Vec<KeyHistory>> {
    let mut histories = Vec::new();
    while sender.may_start_key() {
        walk(&sender, &platform, &mut histories).await;
    }
    Ok(histories)
}

/// Walks one ride through its life, each key's history added to `histories`.
pub async fn walk(sender: &Sender<'_>, platform: &Platform<'_>, histories: &mut Vec<KeyHistory>) {
    let options = sender.options;
    let assigned = {
        let mut rng = rand::thread_rng();
        rng.gen_bool(options.assign_share)
            .then(|| match rng.gen_bool(options.assign_held_share) {
                true => Assigned::Held,
                false => Assigned::Paid,
            })
    };
    let (amount_cents, expected) = {
        let mut rng = rand::thread_rng();
        let expected = if rng.gen_bool(options.decline_share) {
            Expected::Declined
        } else if rng.gen_bool(options.automatic_share) {
            Expected::Captured
        } else if rng.gen_bool(options.no_raise_share) {
            Expected::AuthorizedNoRaise
        } else {
            Expected::Authorized
        };
        (rng.gen_range(50..=100_000), expected)
    };
    let ride = Request::Ride {
        amount_cents,
        expected,
    };
    let Some(created) = step(sender, histories, ride).await else {
        return;
    };
    let Some(ride_id) = created.ride_id() else {
        return;
    };
    let captured_cents = match created.text("status").as_deref() {
        Some("captured") => {
            let tip_cents = maybe_tip(sender, histories, &ride_id, amount_cents).await;
            if assigned.is_some() {
                assign(platform, histories, &ride_id).await;
            }
            amount_cents + tip_cents
        }
        Some("authorized") => {
            if assigned == Some(Assigned::Held) {
                assign(platform, histories, &ride_id).await;
            }
            let refuses_raise = expected == Expected::AuthorizedNoRaise;
            // A card that refuses raises is not tipped: whether the fare and
            // tip need one would hang on a tip whose answer may be lost.
            let tip_cents = match refuses_raise {
                true => 0,
                false => maybe_tip(sender, histories, &ride_id, amount_cents).await,
            };
            let hold = Hold {
                ride_id: ride_id.clone(),
                cents: amount_cents,
                refuses_raise,
                tip_cents,
            };
            let captured_cents = match settle(sender, histories, &hold).await {
                Some(captured_cents) => captured_cents,
                None => return,
            };
            if assigned == Some(Assigned::Paid) && captured_cents > 0 {
                assign(platform, histories, &ride_id).await;
            }
            captured_cents
        }
        _ => return,
    };
    if captured_cents > 0
        && sender.may_start_key()
        && rand::thread_rng().gen_bool(options.refund_share)
    {
        if assigned.is_some() && rand::thread_rng().gen_bool(options.refund_after_paid_share) {
            platform.until_paid(&ride_id).await;
        }
        let amount_cents = rand::thread_rng().gen_range(1..=captured_cents);
        step(
            sender,
            histories,
            Request::Refund {
                ride_id,
                amount_cents,
            },
        )
        .await;
    }
}

/// Tips the ride (up to a fifth of its fare) in `tip_share` of walks: on a
/// held ride, for the completion to capture; on a captured one, charged
/// off session. The tip, once acknowledged; else 0.
async fn maybe_tip(
    sender: &Sender<'_>,
    histories: &mut Vec<KeyHistory>,
    ride_id: &str,
    fare_cents: i64,
) -> i64 {
    let amount_cents = {
        let mut rng = rand::thread_rng();
        if !rng.gen_bool(sender.options.tip_share) || !sender.may_start_key() {
            return 0;
        }
        rng.gen_range(1..=(fare_cents / 5).max(1))
    };
    let tip = Request::Tip {
        ride_id: ride_id.to_owned(),
        amount_cents,
    };
    match step(sender, histories, tip).await {
        Some(answer) if answer.status == 200 => amount_cents,
        _ => 0,
    }
}

impl Platform<'_> {
    /// Until the ride's driver has been paid what its charges owe them (or
    /// netted it), as the platform reads the ride, for a while at most: a
    /// restricted driver is not paid meanwhile.
    async fn until_paid(&self, ride_id: &str) {
        let path = format!("/api/rides/{ride_id}");
        for _ in 0..PAID_POLLS {
            let ride = self.sender.get(&path).await.and_then(|answer| {
                (answer.status == 200)
                    .then(|| serde_json::from_slice::<Value>(&answer.body).ok())?
            });
            let transfers = ride
                .as_ref()
                .and_then(|ride| ride["driver"]["transfers"].as_array());
            if transfers.is_some_and(|transfers| {
                !transfers.is_empty()
                    && transfers.iter().all(|transfer| {
                        ["paid", "netted"]
                            .contains(&transfer["status"].as_str().unwrap_or_default())
                    })
            }) {
                return;
            }
            tokio::time::sleep(PAID_POLL_PAUSE).await;
        }
    }
}

/// Gives the ride a driver the platform may assign now, if there is one
/// and the campaign leaves room for a key.
async fn assign(platform: &Platform<'_>, histories: &mut Vec<KeyHistory>, ride_id: &str) {
    if !platform.sender.may_start_key() {
        return;
    }
    let Some((driver, _assignable)) = platform.drivers.assignable().await else {
        return;
    };
    let request = Request::Assign {
        ride_id: ride_id.to_owned(),
        driver_id: driver.registered.id.clone(),
    };
    step(&platform.sender, histories, request).await;
}

/// A held ride, as its client knows it.
struct Hold {
    /// As the ride's answer gave it.
    ride_id: String,
    cents: i64,
    /// Its card declines raising the hold.
    refuses_raise: bool,
    /// The tip acknowledged, which a completion captures with the fare.
    tip_cents: i64,
}

/// Completes or cancels a held ride; what was captured, once acknowledged
/// (a completion's tip with it; a cancellation drops the tip). A completion
/// refused for a hold that cannot be raised is tried again for what the
/// hold covers, as ridepay's answer suggests.
async fn settle(sender: &Sender<'_>, histories: &mut Vec<KeyHistory>, hold: &Hold) -> Option<i64> {
    let options = sender.options;
    let (ride_id, hold_cents, refuses_raise) = (&hold.ride_id, hold.cents, hold.refuses_raise);
    let mut request = {
        let mut rng = rand::thread_rng();
        if rng.gen_bool(options.complete_share) {
            let swing = rng.gen_range(-FARE_SWING..=FARE_SWING);
            let final_amount_cents = ((hold_cents as f64 * (1.0 + swing)).round() as i64)
                .clamp(*FARE_CENTS.start(), *FARE_CENTS.end());
            Request::Complete {
                ride_id: ride_id.clone(),
                final_amount_cents,
                raise_declines: refuses_raise && final_amount_cents > hold_cents,
            }
        } else {
            let fee_cents = if rng.gen_bool(options.fee_share) {
                rng.gen_range(1..=hold_cents)
            } else {
                0
            };
            Request::Cancel {
                ride_id: ride_id.clone(),
                fee_cents,
            }
        }
    };
    for _ in 0..2 {
        if !sender.may_start_key() {
            return None;
        }
        let answer = step(sender, histories, request.clone()).await?;
        match (answer.status, &request) {
            (200, Request::Complete { .. }) => {
                return request.captured_cents().map(|fare| fare + hold.tip_cents)
            }
            (200, _) => return request.captured_cents(),
            (402, Request::Complete { .. }) => {
                request = Request::Complete {
                    ride_id: ride_id.clone(),
                    final_amount_cents: hold_cents,
                    raise_declines: false,
                };
            }
            _ => return None,
        }
    }
    None
}

/// Sends `request` under a fresh key and records its history; the first
/// final answer, if any.
async fn step(
    sender: &Sender<'_>,
    histories: &mut Vec<KeyHistory>,
    request: Request,
) -> Option<Answer> {
    let history = sender.send(request).await;
    let answer = history.first_final.clone();
    histories.push(history);
    answer
}
