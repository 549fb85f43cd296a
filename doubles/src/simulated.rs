//! An honest stand-in for Stripe, in process: it keeps its PaymentIntents
//! and refunds in tables of its own, commits each call in its own
//! transaction as an external system would, is idempotent on the caller's
//! key, and treats test payment methods as Stripe's test mode does (see
//! `intents` and `refunds`). Its events go to ridepay in-process
//! (`workers`).

use std::thread;
use std::time::Duration;

use rand::Rng;

use diesel::r2d2::{ManageConnection, Pool, PooledConnection};
use diesel::PgConnection;

use super::events::Double;
use super::intents::{self, IntentSettings};
use super::{account_balance, accounts, balance, refunds, transfers};
use crate::settings::SimulatedGatewaySettings;
use ridepay_gateway::{
    Account, AccountLink, AccountPage, Balance, BalanceTransactionPage, CancelIntent,
    CaptureIntent, CreateAccount, CreateAccountLink, CreateIntent, CreateTransfer,
    CreateTransferReversal, GatewayError, IncrementIntent, IntentPage, ListAccounts,
    ListBalanceTransactions, ListIntents, ListTransferReversals, ListTransfers, Payment,
    PaymentGateway, PaymentIntent, Refund, RefundRequest, Transfer, TransferPage, TransferReversal,
    TransferReversalPage,
};

/// On the caller's own pool (any r2d2 manager of PostgreSQL connections):
/// its tables sit beside the caller's, as the service runs it.
pub struct SimulatedGateway<M: ManageConnection<Connection = PgConnection>> {
    pool: Pool<M>,
    faults: SimulatedGatewaySettings,
    intents: IntentSettings,
    /// The onboarding page its account links send a driver to.
    onboarding_page: String,
    /// Called while a call is in flight, after its latency and before its
    /// effect: where a crash test stops the process.
    in_flight: fn(),
}

/// How long a simulated rate limit asks the caller to wait.
pub const RATE_LIMIT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Where `cargo run` serves the simulated authentication page by default.
const DEFAULT_AUTHENTICATION_PAGE: &str = "http://127.0.0.1:8080/simulated-gateway/authenticate";

/// Where `cargo run` serves the simulated onboarding page by default.
const DEFAULT_ONBOARDING_PAGE: &str = "http://127.0.0.1:8080/simulated-gateway/onboard";

impl<M: ManageConnection<Connection = PgConnection>> SimulatedGateway<M> {
    /// Its authentication and onboarding pages are taken to be at ridepay's
    /// default address; the server names its own with
    /// `with_authentication_page` and `with_onboarding_page`.
    pub fn new(pool: Pool<M>, faults: SimulatedGatewaySettings) -> Self {
        let intents = IntentSettings {
            double: Double::Simulated,
            authentication_page: DEFAULT_AUTHENTICATION_PAGE.to_owned(),
            authorization_ttl: faults.authorization_ttl,
            extended_authorization_ttl: faults.extended_authorization_ttl,
        };
        SimulatedGateway {
            pool,
            faults,
            intents,
            onboarding_page: DEFAULT_ONBOARDING_PAGE.to_owned(),
            in_flight: || {},
        }
    }

    /// The page a `requires_action` sends the rider to.
    pub fn with_authentication_page(mut self, url: String) -> Self {
        self.intents.authentication_page = url;
        self
    }

    /// The page its account links send a driver to.
    pub fn with_onboarding_page(mut self, url: String) -> Self {
        self.onboarding_page = url;
        self
    }

    /// `hook` runs while each call is in flight (see `in_flight`).
    pub fn with_in_flight_hook(mut self, hook: fn()) -> Self {
        self.in_flight = hook;
        self
    }

    /// One call under `key` with the fault knobs around it: rate limit,
    /// latency, a failure before acting, a 500 saved under the key (before
    /// or after acting), and a response lost after `act` committed.
    fn with_faults<T>(
        &self,
        key: &str,
        act: impl FnOnce(&mut PgConnection) -> Result<(T, String), GatewayError>,
    ) -> Result<T, GatewayError> {
        let mut rng = rand::thread_rng();
        if rng.gen_bool(self.faults.rate_limit_rate) {
            return Err(GatewayError::Unavailable {
                reason: "simulated rate limit".to_owned(),
                retry_after: Some(RATE_LIMIT_RETRY_AFTER),
            });
        }
        if !self.faults.latency.is_zero() {
            thread::sleep(self.faults.latency);
        }
        (self.in_flight)();
        if rng.gen_bool(self.faults.fail_rate) {
            return Err(GatewayError::Unavailable {
                reason: "simulated failure before acting".to_owned(),
                retry_after: None,
            });
        }
        let mut conn = self.connection()?;
        if let Some(age) = self.faults.forget_keys {
            intents::forget_older_than(&mut conn, key, age)?;
        }
        // A key answered before is answered as before (its saved 500
        // included), whatever the dice say now.
        if rng.gen_bool(self.faults.saved_error_rate) && !intents::is_kept(&mut conn, key)? {
            if rng.gen_bool(0.5) {
                // What it made stays made; its answer is lost for good.
                let _made = act(&mut conn);
            }
            intents::save_failure(&mut conn, key)?;
            // The first answer is a plain 500; retries get it replayed.
            return Err(GatewayError::OutcomeUnknown {
                reason: format!("simulated 500, saved under key {key}"),
            });
        }
        let (answer, recorded_id) = act(&mut conn)?;
        if rng.gen_bool(self.faults.lost_response_rate) {
            return Err(GatewayError::OutcomeUnknown {
                reason: format!("simulated lost response after recording {recorded_id}"),
            });
        }
        Ok(answer)
    }

    fn connection(&self) -> Result<PooledConnection<M>, GatewayError> {
        self.pool.get().map_err(|err| GatewayError::Unavailable {
            reason: format!("simulated gateway storage: {err}"),
            retry_after: None,
        })
    }
}

impl<M: ManageConnection<Connection = PgConnection>> PaymentGateway for SimulatedGateway<M> {
    fn create_intent(&self, request: &CreateIntent) -> Result<PaymentIntent, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let intent = intents::create(conn, request, &self.intents)?;
            let id = intent.id.clone();
            Ok((intent, id))
        })
    }

    fn capture_intent(&self, request: &CaptureIntent) -> Result<PaymentIntent, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let intent = intents::capture(conn, request, &self.intents)?;
            Ok((intent, request.intent_id.clone()))
        })
    }

    fn increment_intent(&self, request: &IncrementIntent) -> Result<PaymentIntent, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let intent = intents::increment(conn, request, &self.intents)?;
            Ok((intent, request.intent_id.clone()))
        })
    }

    fn cancel_intent(&self, request: &CancelIntent) -> Result<PaymentIntent, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let intent = intents::cancel(conn, request, &self.intents)?;
            Ok((intent, request.intent_id.clone()))
        })
    }

    /// Reads are not subject to the fault knobs, which model the effects.
    fn retrieve_intent(&self, id: &str) -> Result<Option<PaymentIntent>, GatewayError> {
        intents::retrieve(&mut *self.connection()?, id, &self.intents)
    }

    fn refund(&self, request: &RefundRequest) -> Result<Refund, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let refund = refunds::refund(conn, request, Double::Simulated)?;
            let id = refund.id.clone();
            Ok((refund, id))
        })
    }

    fn refunds_of(&self, payment: &Payment) -> Result<Vec<Refund>, GatewayError> {
        refunds::refunds_of(&mut *self.connection()?, payment)
    }

    fn list_intents(&self, request: &ListIntents) -> Result<IntentPage, GatewayError> {
        intents::list(&mut *self.connection()?, request, &self.intents)
    }

    fn search_intents(&self, metadata: &[(&str, &str)]) -> Result<IntentPage, GatewayError> {
        let lag = self.faults.search_lag;
        intents::search(&mut *self.connection()?, metadata, lag, &self.intents)
    }

    fn list_balance_transactions(
        &self,
        request: &ListBalanceTransactions,
    ) -> Result<BalanceTransactionPage, GatewayError> {
        balance::list(&mut *self.connection()?, request, Double::Simulated)
    }

    fn create_account(&self, request: &CreateAccount) -> Result<Account, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let account = accounts::create(conn, request, Double::Simulated)?;
            let id = account.id.clone();
            Ok((account, id))
        })
    }

    fn retrieve_account(&self, id: &str) -> Result<Option<Account>, GatewayError> {
        accounts::retrieve(&mut *self.connection()?, id, Double::Simulated)
    }

    fn list_accounts(&self, request: &ListAccounts) -> Result<AccountPage, GatewayError> {
        accounts::list(&mut *self.connection()?, request, Double::Simulated)
    }

    fn create_account_link(
        &self,
        request: &CreateAccountLink,
    ) -> Result<AccountLink, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let page = &self.onboarding_page;
            let link = accounts::create_link(conn, request, Double::Simulated, page)?;
            let url = link.url.clone();
            Ok((link, url))
        })
    }

    fn create_transfer(&self, request: &CreateTransfer) -> Result<Transfer, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let pending_for = self.faults.transfer_available;
            let transfer = transfers::create(conn, request, Double::Simulated, pending_for)?;
            let id = transfer.id.clone();
            Ok((transfer, id))
        })
    }

    fn list_transfers(&self, request: &ListTransfers) -> Result<TransferPage, GatewayError> {
        transfers::list(&mut *self.connection()?, request, Double::Simulated)
    }

    fn create_transfer_reversal(
        &self,
        request: &CreateTransferReversal,
    ) -> Result<TransferReversal, GatewayError> {
        self.with_faults(&request.idempotency_key, |conn| {
            let reversal = transfers::reverse(conn, request, Double::Simulated)?;
            let id = reversal.id.clone();
            Ok((reversal, id))
        })
    }

    fn list_transfer_reversals(
        &self,
        request: &ListTransferReversals,
    ) -> Result<TransferReversalPage, GatewayError> {
        let listed =
            transfers::list_reversals(&mut *self.connection()?, request, Double::Simulated)?;
        // As the Stripe client takes Stripe's 404 for a transfer it does
        // not have: a list's 404 proves nothing.
        listed.ok_or_else(|| GatewayError::Unavailable {
            reason: format!("no such transfer: '{}'", request.transfer),
            retry_after: None,
        })
    }

    fn retrieve_balance(&self, account: &str) -> Result<Balance, GatewayError> {
        account_balance::retrieve(&mut *self.connection()?, account, Double::Simulated)
    }
}
