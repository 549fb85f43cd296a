//! A client's ride from request to end: asked for, then, held, completed
//! (the final fare up to 30% off the upfront one either way) or cancelled
//! (maybe with a fee), and what was captured sometimes partly refunded. Each
//! step under a key of its own; a client that learns no answer leaves the
//! ride as it is, to the completer.

use rand::Rng;

use std::time::Instant;

use super::fleet::Fleet;
use super::history::{Counters, Expected, KeyHistory, Request};
use super::options::Options;
use super::retrying_client::Sender;
use crate::client::Answer;

/// The bounds ridepay sets on a fare.
const FARE_CENTS: std::ops::RangeInclusive<i64> = 50..=1_000_000;
const FARE_SWING: f64 = 0.3;

/// Runs one virtual client until the campaign's time or request budget is
/// spent, and returns the history of its keys.
pub async fn run_client(
    fleet: &Fleet,
    counters: &Counters,
    options: &Options,
    api_key: &str,
    deadline: Instant,
) -> anyhow::Result<Vec<KeyHistory>> {
    let sender = Sender::new(fleet, counters, options, api_key, deadline)?;
    let mut histories = Vec::new();
    while sender.may_start_key() {
        walk(&sender, &mut histories).await;
    }
    Ok(histories)
}

/// Walks one ride through its life, each key's history added to `histories`.
pub async fn walk(sender: &Sender<'_>, histories: &mut Vec<KeyHistory>) {
    let options = sender.options;
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
        Some("captured") => amount_cents,
        Some("authorized") => {
            let refuses_raise = expected == Expected::AuthorizedNoRaise;
            match settle(sender, histories, ride_id, amount_cents, refuses_raise).await {
                Some(captured_cents) => captured_cents,
                None => return,
            }
        }
        _ => return,
    };
    if captured_cents > 0
        && sender.may_start_key()
        && rand::thread_rng().gen_bool(options.refund_share)
    {
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

/// Completes or cancels a held ride; what was captured, once acknowledged.
/// A completion refused for a hold that cannot be raised is tried again
/// for what the hold covers, as ridepay's answer suggests.
async fn settle(
    sender: &Sender<'_>,
    histories: &mut Vec<KeyHistory>,
    ride_id: i64,
    hold_cents: i64,
    refuses_raise: bool,
) -> Option<i64> {
    let options = sender.options;
    let mut request = {
        let mut rng = rand::thread_rng();
        if rng.gen_bool(options.complete_share) {
            let swing = rng.gen_range(-FARE_SWING..=FARE_SWING);
            let final_amount_cents = ((hold_cents as f64 * (1.0 + swing)).round() as i64)
                .clamp(*FARE_CENTS.start(), *FARE_CENTS.end());
            Request::Complete {
                ride_id,
                final_amount_cents,
                raise_declines: refuses_raise && final_amount_cents > hold_cents,
            }
        } else {
            let fee_cents = if rng.gen_bool(options.fee_share) {
                rng.gen_range(1..=hold_cents)
            } else {
                0
            };
            Request::Cancel { ride_id, fee_cents }
        }
    };
    for _ in 0..2 {
        if !sender.may_start_key() {
            return None;
        }
        let answer = step(sender, histories, request).await?;
        match (answer.status, request) {
            (200, _) => return request.captured_cents(),
            (402, Request::Complete { .. }) => {
                request = Request::Complete {
                    ride_id,
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
