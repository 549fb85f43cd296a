//! Each call once per idempotency key: its answer kept with the key in
//! `simulated_intent_calls`, and given again to a retry with the same
//! parameters.

use diesel::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::errors::{storage, transaction};
use crate::schema::simulated_intent_calls;
use ridepay_diesel_helpers::CacheStatement;
use ridepay_gateway::GatewayError;

/// What a call makes, marked as given again from its key's kept answer;
/// most objects carry no such mark and are given again as they are.
pub(crate) trait Replayable: Sized {
    fn replayed(self) -> Self {
        self
    }
}

impl Replayable for ridepay_gateway::PaymentIntent {
    fn replayed(self) -> Self {
        ridepay_gateway::PaymentIntent {
            replayed: true,
            ..self
        }
    }
}

impl Replayable for ridepay_gateway::Refund {}

/// What a call answered, as kept with its key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer<T> {
    #[serde(alias = "intent")]
    Made(T),
    Declined {
        code: String,
        decline_code: Option<String>,
        message: String,
        payment_intent: Option<String>,
    },
    Rejected {
        message: String,
    },
    /// A 500 saved under the key, answered to every retry.
    SavedFailure,
}

/// The operation a failure saved before acting is kept under.
const SAVED_FAILURE: &str = "saved_failure";

/// Saves a 500 under `key`, as Stripe does with a request that failed once
/// it began executing: in place of the answer of what the call made (a
/// failure after acting), or alone (before acting). Every later call under
/// the key is answered with it.
pub fn save_failure(conn: &mut PgConnection, key: &str) -> Result<(), GatewayError> {
    let answer = serde_json::to_value(Answer::<()>::SavedFailure).expect("answers serialise");
    diesel::insert_into(simulated_intent_calls::table)
        .values((
            simulated_intent_calls::idempotency_key.eq(key),
            simulated_intent_calls::operation.eq(SAVED_FAILURE),
            simulated_intent_calls::parameters.eq(Value::Null),
            simulated_intent_calls::answer.eq(&answer),
        ))
        .on_conflict(simulated_intent_calls::idempotency_key)
        .do_update()
        .set(simulated_intent_calls::answer.eq(&answer))
        .execute(conn)
        .map_err(storage)?;
    Ok(())
}

/// Whether anything is kept under `key`: a call under it is answered from
/// that, not made afresh.
pub fn is_kept(conn: &mut PgConnection, key: &str) -> Result<bool, GatewayError> {
    diesel::select(diesel::dsl::exists(simulated_intent_calls::table.find(key)))
        .get_result(conn)
        .map_err(storage)
}

/// Forgets `key` if it was first used longer than `age` ago, as Stripe
/// forgets a key after 24 hours: a call under it then acts afresh.
pub fn forget_older_than(
    conn: &mut PgConnection,
    key: &str,
    age: std::time::Duration,
) -> Result<(), GatewayError> {
    let cutoff = chrono::Utc::now() - chrono::Duration::from_std(age).unwrap_or_default();
    diesel::delete(
        simulated_intent_calls::table
            .filter(simulated_intent_calls::idempotency_key.eq(key))
            .filter(simulated_intent_calls::created_at.le(cutoff)),
    )
    .execute(conn)
    .map_err(storage)?;
    Ok(())
}

/// The answer to keep for `result`, as JSON: `None` for a failure that is
/// not final, after which a retry acts afresh.
pub(crate) fn to_keep<T: Clone + Serialize>(result: &Result<T, GatewayError>) -> Option<Value> {
    let answer = match result {
        Ok(made) => Answer::Made(made.clone()),
        Err(GatewayError::Declined {
            code,
            decline_code,
            message,
            payment_intent,
        }) => Answer::Declined {
            code: code.clone(),
            decline_code: decline_code.clone(),
            message: message.clone(),
            payment_intent: payment_intent.clone(),
        },
        Err(GatewayError::Rejected { message }) => Answer::Rejected {
            message: message.clone(),
        },
        Err(_) => return None,
    };
    Some(serde_json::to_value(answer).expect("answers serialise"))
}

impl<T> Answer<T> {
    pub(crate) fn into_result(self) -> Result<T, GatewayError> {
        match self {
            Answer::Made(made) => Ok(made),
            Answer::Declined {
                code,
                decline_code,
                message,
                payment_intent,
            } => Err(GatewayError::Declined {
                code,
                decline_code,
                message,
                payment_intent,
            }),
            Answer::Rejected { message } => Err(GatewayError::Rejected { message }),
            Answer::SavedFailure => Err(GatewayError::SavedFailure {
                reason: "simulated failure, saved under the key".to_owned(),
            }),
        }
    }
}

/// A call under its caller's idempotency key, as `simulated_intent_calls`
/// keeps it with its answer.
pub(crate) struct Call<'a> {
    pub(crate) key: &'a str,
    pub(crate) operation: &'static str,
    pub(crate) parameters: Value,
}

/// An answer kept with its key, and the call it answered.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = simulated_intent_calls, check_for_backend(diesel::pg::Pg))]
pub(crate) struct KeptCall {
    pub(crate) operation: String,
    pub(crate) parameters: Value,
    pub(crate) answer: Value,
}

impl<'a> Call<'a> {
    pub(crate) fn new(operation: &'static str, key: &'a str, request: &impl Serialize) -> Self {
        Call {
            key,
            operation,
            parameters: serde_json::to_value(request).expect("requests serialise"),
        }
    }

    /// The answer kept for the key: the same operation and parameters get it
    /// again; others, an error an operator must look at, as Stripe's
    /// `idempotency_error` is.
    pub(crate) fn replay<T: DeserializeOwned + Replayable>(
        &self,
        kept: KeptCall,
    ) -> Result<T, GatewayError> {
        let key = self.key;
        // Stripe answers its saved 500 whatever the retry's parameters.
        let same_call = kept.operation == self.operation && kept.parameters == self.parameters;
        if kept.operation != SAVED_FAILURE && !same_call {
            return Err(GatewayError::Misconfigured {
                reason: format!(
                    "idempotency_error: key {key} was first used for {} with other parameters",
                    kept.operation
                ),
            });
        }
        let answer: Answer<T> =
            serde_json::from_value(kept.answer).map_err(|err| GatewayError::Misconfigured {
                reason: format!("unreadable kept answer for key {key}: {err}"),
            })?;
        answer.into_result().map(Replayable::replayed)
    }

    pub(crate) fn kept(&self, conn: &mut PgConnection) -> QueryResult<Option<KeptCall>> {
        simulated_intent_calls::table
            .find(self.key)
            .select(KeptCall::as_select())
            .cached_as(Self::kept)
            .get_result(conn)
            .optional()
    }

    /// The answer another call kept under the key first, as it answers
    /// this one.
    pub(crate) fn answered_meanwhile<T: DeserializeOwned + Replayable>(
        &self,
        conn: &mut PgConnection,
    ) -> Result<T, GatewayError> {
        match self.kept(conn).map_err(storage)? {
            Some(kept) => self.replay(kept),
            None => Err(GatewayError::Unavailable {
                reason: format!("simulated gateway: no answer kept for key {}", self.key),
                retry_after: None,
            }),
        }
    }

    /// Keeps `answer` with the key, alone: for an answer that changed
    /// nothing, or in the transaction of what it made. False when another
    /// call kept one first (waited for, if it had not committed yet).
    pub(crate) fn keep(&self, conn: &mut PgConnection, answer: &Value) -> QueryResult<bool> {
        let kept = diesel::insert_into(simulated_intent_calls::table)
            .values((
                simulated_intent_calls::idempotency_key.eq(self.key),
                simulated_intent_calls::operation.eq(self.operation),
                simulated_intent_calls::parameters.eq(&self.parameters),
                simulated_intent_calls::answer.eq(answer),
            ))
            .on_conflict_do_nothing()
            .returning(simulated_intent_calls::idempotency_key)
            .cached_as(Self::keep)
            .get_result::<String>(conn)
            .optional()?;
        Ok(kept.is_some())
    }

    /// Keeps `answer` with the key and, in the same transaction, what
    /// `make` writes; neither when another call kept one first.
    pub(crate) fn keep_making(
        &self,
        conn: &mut PgConnection,
        answer: &Value,
        make: impl FnOnce(&mut PgConnection) -> QueryResult<usize>,
    ) -> QueryResult<bool> {
        conn.transaction(|conn| {
            let kept = self.keep(conn, answer)?;
            if kept {
                make(conn)?;
            }
            Ok(kept)
        })
    }

    /// `result`, its answer kept by `write` with what it makes (false when
    /// another call under the key answered first, and `write` wrote
    /// nothing); else that other call's answer.
    pub(crate) fn answer_once<T: Clone + Serialize + DeserializeOwned + Replayable>(
        &self,
        conn: &mut PgConnection,
        result: Result<T, GatewayError>,
        write: impl FnOnce(&mut PgConnection, &Value) -> QueryResult<bool>,
    ) -> Result<T, GatewayError> {
        let Some(answer) = to_keep(&result) else {
            return result;
        };
        if write(conn, &answer).map_err(storage)? {
            result
        } else {
            self.answered_meanwhile(conn)
        }
    }

    /// The call judged and answered in one transaction: `judge` decides,
    /// under the row locks it takes, what the call makes or why it is
    /// refused, and the answer is kept with the key, with what `write`
    /// makes, before those locks are let go, so no other call judges by
    /// what this one is changing. Under a key answered already, or answered
    /// meanwhile by another call, that answer.
    pub(crate) fn answer_judged<M, T>(
        &self,
        conn: &mut PgConnection,
        judge: impl FnOnce(&mut PgConnection) -> Result<M, GatewayError>,
        answer: impl FnOnce(&M) -> T,
        write: impl FnOnce(&mut PgConnection, &M) -> Result<(), GatewayError>,
    ) -> Result<T, GatewayError>
    where
        T: Clone + Serialize + DeserializeOwned + Replayable,
    {
        if let Some(kept) = self.kept(conn).map_err(storage)? {
            return self.replay(kept);
        }
        let answered = transaction(conn, |conn| {
            let made = judge(conn);
            let result = made.as_ref().map(answer).map_err(Clone::clone);
            let Some(kept) = to_keep(&result) else {
                return result.map(|_| None);
            };
            if !self.keep(conn, &kept).map_err(storage)? {
                return Ok(None);
            }
            if let Ok(made) = &made {
                write(conn, made)?;
            }
            Ok(Some(result))
        })?;
        match answered {
            Some(result) => result,
            None => self.answered_meanwhile(conn),
        }
    }
}
