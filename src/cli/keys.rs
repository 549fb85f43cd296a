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
        .is_some_and(|locked_at| locked_at > now - db::span(settings.keys.lease_timeout));
    json!({
        "id": record.id,
        "user_id": record.user_id,
        "key": record.key,
        "request": { "method": record.request_method, "path": record.request_path, "params": masked(record.request_params.clone()) },
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
            "body": masked_body(&response.body),
        })),
    })
}

/// A stored body as an operator may see it: `masked`, when it is JSON.
fn masked_body(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => masked(value).to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

/// A stored request or answer as an operator may see it: a webhook
/// destination's signing secret, a PaymentIntent's client secret and a
/// driver's onboarding URL (its path carries the token) masked, and every
/// URL's password and query values (a receiver's `?code=`, the
/// client secret a 3-D Secure page's address carries), wherever they stand.
fn masked(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .map(|(name, value)| {
                    let value = match (name.as_str(), value) {
                        ("secret", Value::String(_)) => json!("whsec_***"),
                        ("client_secret" | "onboarding_url", Value::String(_)) => json!("***"),
                        (_, value) => masked(value),
                    };
                    (name, value)
                })
                .collect(),
        ),
        Value::Array(values) => Value::Array(values.into_iter().map(masked).collect()),
        Value::String(text) if text.starts_with("http://") || text.starts_with("https://") => {
            Value::String(crate::config::mask_url(&text))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_secret_in_a_stored_answer_is_masked() {
        let shown = masked_body(br#"{"id":1,"secret":"whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}"#);
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        assert!(shown.contains("whsec_***"), "{shown}");
        assert_eq!(masked_body(b"{\"id\":7}"), "{\"id\":7}");
        let driver = masked_body(
            br#"{"id":"drv_1","onboarding_url":"https://rides.example/drivers/onboarding/0123456789abcdef0123456789abcdef/start"}"#,
        );
        assert!(!driver.contains("0123456789abcdef"), "{driver}");
    }

    #[test]
    fn client_secrets_and_url_queries_are_masked_wherever_they_stand() {
        let answer = json!({
            "id": 3,
            "next_action": {
                "type": "redirect_to_url",
                "redirect_to_url": {
                    "url": "https://bank.example/3ds?payment_intent=pi_1&client_secret=pi_1_secret_Zq",
                    "return_url": "https://app.example/back?session=s3cr3t",
                },
                "client_secret": "pi_1_secret_Zq",
            },
        });
        let shown = masked_body(answer.to_string().as_bytes());
        for secret in ["secret_Zq", "s3cr3t", "pi_1&"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("https://bank.example/3ds?payment_intent=***"),
            "{shown}"
        );
        let request = masked(json!({"url": "https://hooks.example/r?code=tok3n", "events": ["*"]}));
        assert_eq!(request["url"], "https://hooks.example/r?code=***");
        assert_eq!(request["events"], json!(["*"]));
    }
}
