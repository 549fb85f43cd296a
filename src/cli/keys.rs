//! `ridepay keys show | stuck`: what an operator needs at 3 a.m. to see where a
//! request stands.

use std::time::Duration;

use clap::Subcommand;
use diesel::PgConnection;
use serde_json::{json, Value};

use super::users::find_user;
use crate::config::Settings;
use crate::db;
use crate::idempotency::{self, KeyRecord};

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// One key: its recovery point, lease, attempts and stored response.
    Show {
        /// The user's id or email.
        #[arg(long)]
        user: String,
        /// The Idempotency-Key, unquoted.
        #[arg(long)]
        key: String,
    },
    /// Unfinished keys an operator should look at: left for attention, or not
    /// run for longer than `--idle-secs`. One JSON object per line.
    Stuck {
        #[arg(long, default_value_t = 300)]
        idle_secs: u64,
    },
}

pub fn run(
    conn: &mut PgConnection,
    settings: &Settings,
    command: KeysCommand,
) -> anyhow::Result<()> {
    let now = db::now(conn)?;
    match command {
        KeysCommand::Show { user, key } => {
            let user = find_user(conn, &user)?;
            let record = idempotency::find(conn, user.id, &key)?
                .ok_or_else(|| anyhow::anyhow!("user {} has no key {key:?}", user.id))?;
            println!(
                "{}",
                serde_json::to_string_pretty(&describe(&record, now, settings))?
            );
        }
        KeysCommand::Stuck { idle_secs } => {
            for record in idempotency::stuck(conn, Duration::from_secs(idle_secs))? {
                println!("{}", describe(&record, now, settings));
            }
        }
    }
    Ok(())
}

/// What will happen to the key next, and who does it.
fn next_step(
    record: &KeyRecord,
    now: chrono::DateTime<chrono::Utc>,
    settings: &Settings,
) -> String {
    let deadline = record.created_at + db::span(settings.completer.charge_deadline);
    if record.recovery_point == idempotency::FINISHED {
        return "nothing: finished; retries get the stored response".to_owned();
    }
    if record.needs_attention_at.is_some() {
        return "an operator settles it (see last_error)".to_owned();
    }
    if let Some(since) = record.outcome_unknown_at {
        let looked_up = since + db::span(settings.reconcile.search_lag);
        let then = if now < deadline {
            format!(
                "not made: sent again under generation {}",
                record.call_generation + 1
            )
        } else {
            "not made: ended with a stored 502 (past the deadline for sending it again)".to_owned()
        };
        return format!(
            "reconciliation looks its call up in the gateway's lists from {looked_up}: \
             made: recorded; {then}"
        );
    }
    "the completer (or the client's retry) resumes it".to_owned()
}

fn describe(record: &KeyRecord, now: chrono::DateTime<chrono::Utc>, settings: &Settings) -> Value {
    let lease_held = record
        .locked_at
        .is_some_and(|locked_at| locked_at > now - db::span(settings.lease_timeout));
    json!({
        "id": record.id,
        "user_id": record.user_id,
        "key": record.key,
        "request": { "method": record.request_method, "path": record.request_path, "params": record.request_params },
        "recovery_point": record.recovery_point,
        "lease": { "epoch": record.lease_epoch, "locked_at": record.locked_at, "held": lease_held },
        "attempts": record.attempts,
        "call_generation": record.call_generation,
        "outcome_unknown_at": record.outcome_unknown_at,
        "next": next_step(record, now, settings),
        "next_attempt_at": record.next_attempt_at,
        "needs_attention_at": record.needs_attention_at,
        "last_error": record.last_error,
        "last_run_at": record.last_run_at,
        "created_at": record.created_at,
        "response": record.state.clone().take_stored_response().map(|response| json!({
            "status": response.status,
            "headers": response.headers,
            "body": masked(&response.body),
        })),
    })
}

/// A stored body as an operator may see it: a webhook destination's
/// signing secret (its registration's answer) masked.
fn masked(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut object)) if object.get("secret").is_some_and(Value::is_string) => {
            object.insert("secret".to_owned(), json!("whsec_***"));
            Value::Object(object).to_string()
        }
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_secret_in_a_stored_answer_is_masked() {
        let shown = masked(br#"{"id":1,"secret":"whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}"#);
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        assert!(shown.contains("whsec_***"), "{shown}");
        assert_eq!(masked(b"{\"id\":7}"), "{\"id\":7}");
    }
}
