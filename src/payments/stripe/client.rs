//! The HTTP client: form-encoded POSTs under the caller's idempotency key,
//! and GETs, with bounded connect and overall timeouts.

use std::time::Duration;

use anyhow::Context;

use super::outcome::{self, Answer};
use super::{accounts, balance_transactions, intents, refunds, transfers};
use secrecy::{ExposeSecret, SecretString};

use crate::config::StripeSettings;
use ridepay_gateway::STRIPE_VERSION;
use ridepay_gateway::{
    Account, AccountLink, AccountPage, Balance, BalanceTransactionPage, CancelIntent,
    CaptureIntent, CreateAccount, CreateAccountLink, CreateIntent, CreateTransfer,
    CreateTransferReversal, GatewayError, IncrementIntent, IntentPage, ListAccounts,
    ListBalanceTransactions, ListIntents, ListTransferReversals, ListTransfers, Payment,
    PaymentGateway, PaymentIntent, Refund, RefundRequest, Transfer, TransferPage, TransferReversal,
    TransferReversalPage,
};

pub struct StripeGateway {
    agent: ureq::Agent,
    refunds_url: String,
    intents_url: String,
    accounts_url: String,
    account_links_url: String,
    balance_transactions_url: String,
    transfers_url: String,
    balance_url: String,
    api_key: SecretString,
}

impl std::fmt::Debug for StripeGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeGateway")
            .field("intents_url", &self.intents_url)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl StripeGateway {
    pub fn new(settings: &StripeSettings) -> anyhow::Result<StripeGateway> {
        let api_key = settings
            .api_key
            .clone()
            .context("GATEWAY=stripe needs STRIPE_API_KEY")?;
        crate::http_client::check_url(&settings.api_base)
            .map_err(|problem| anyhow::anyhow!("STRIPE_API_BASE {problem}"))?;
        // Error answers carry Stripe's error object: read as answers.
        let agent = crate::http_client::agent(settings.connect_timeout, settings.timeout);
        let base = settings.api_base.trim_end_matches('/');
        Ok(StripeGateway {
            agent,
            refunds_url: format!("{base}/v1/refunds"),
            intents_url: format!("{base}/v1/payment_intents"),
            accounts_url: format!("{base}/v1/accounts"),
            account_links_url: format!("{base}/v1/account_links"),
            balance_transactions_url: format!("{base}/v1/balance_transactions"),
            transfers_url: format!("{base}/v1/transfers"),
            balance_url: format!("{base}/v1/balance"),
            api_key,
        })
    }

    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        request
            .header(
                "Authorization",
                &format!("Bearer {}", self.api_key.expose_secret()),
            )
            .header("Stripe-Version", STRIPE_VERSION)
    }

    /// One form-encoded POST under `idempotency_key`, its 2xx body read by
    /// `accepted` (told whether Stripe replayed it); transient failures
    /// logged with the key.
    fn post<T>(
        &self,
        url: &str,
        idempotency_key: &str,
        form: Vec<(String, String)>,
        accepted: impl FnOnce(&[u8], bool) -> Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        let accepted =
            |answer: &Answer| outcome::classify(answer, |body| accepted(body, answer.replayed));
        let result = self
            .authorized(self.agent.post(url))
            .header("Idempotency-Key", idempotency_key)
            .send_form(form)
            .map_err(outcome::transport_failure)
            .and_then(|response| read_answer(response, accepted));
        // Declines, rejections and misconfigurations are logged where they are
        // handled; a transient failure is worth a line here, with its key.
        if let Err(err @ (GatewayError::Unavailable { .. } | GatewayError::OutcomeUnknown { .. })) =
            &result
        {
            log::warn!("Stripe call to {url} under key {idempotency_key} failed: {err}");
        }
        result
    }
}

/// Reads an answer whole and says what it means.
fn read_answer<T>(
    mut response: ureq::http::Response<ureq::Body>,
    interpret: impl FnOnce(&Answer) -> Result<T, GatewayError>,
) -> Result<T, GatewayError> {
    let status = response.status().as_u16();
    let headers = response.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    let retry_after = header("retry-after")
        .and_then(|value| value.parse().ok())
        .map(Duration::from_secs);
    let should_retry = header("stripe-should-retry").map(|value| value == "true");
    let replayed = header("idempotent-replayed") == Some("true");
    // Stripe's id of the request, for its support and its dashboard's logs.
    let request_id = header("request-id").map(str::to_owned);
    let body = response
        .body_mut()
        .read_to_vec()
        .map_err(outcome::transport_failure)?;
    interpret(&Answer {
        status,
        retry_after,
        should_retry,
        replayed,
        request_id,
        body: &body,
    })
}

impl StripeGateway {
    /// A GET of one object, or a list; `None` when Stripe has no such object.
    fn get<T>(
        &self,
        url: &str,
        query: &[(&str, &str)],
        accepted: impl FnOnce(&[u8]) -> Result<T, GatewayError>,
    ) -> Result<Option<T>, GatewayError> {
        self.get_as(None, url, query, accepted)
    }

    /// A GET made as the connected account `account` (`Stripe-Account`)
    /// when one is named, else as the platform.
    fn get_as<T>(
        &self,
        account: Option<&str>,
        url: &str,
        query: &[(&str, &str)],
        accepted: impl FnOnce(&[u8]) -> Result<T, GatewayError>,
    ) -> Result<Option<T>, GatewayError> {
        let mut request = self.authorized(self.agent.get(url));
        if let Some(account) = account {
            request = request.header("Stripe-Account", account);
        }
        for (name, value) in query {
            request = request.query(*name, *value);
        }
        let response = request.call().map_err(outcome::transport_failure)?;
        read_answer(response, |answer| {
            if outcome::is_missing(answer) {
                return Ok(None);
            }
            outcome::classify(answer, accepted).map(Some)
        })
    }
}

impl PaymentGateway for StripeGateway {
    fn create_intent(&self, request: &CreateIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &self.intents_url,
            &request.idempotency_key,
            intents::create_form(request),
            intents::answered_intent,
        )
    }

    fn capture_intent(&self, request: &CaptureIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &format!("{}/{}/capture", self.intents_url, request.intent_id),
            &request.idempotency_key,
            intents::capture_form(request),
            intents::answered_intent,
        )
    }

    fn increment_intent(&self, request: &IncrementIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &format!(
                "{}/{}/increment_authorization",
                self.intents_url, request.intent_id
            ),
            &request.idempotency_key,
            intents::increment_form(request),
            intents::answered_intent,
        )
    }

    fn cancel_intent(&self, request: &CancelIntent) -> Result<PaymentIntent, GatewayError> {
        self.post(
            &format!("{}/{}/cancel", self.intents_url, request.intent_id),
            &request.idempotency_key,
            intents::cancel_form(request),
            intents::answered_intent,
        )
    }

    /// The charge is expanded for whether it is disputed, with its balance
    /// transaction for the gateway's fee on what it captured.
    fn retrieve_intent(&self, id: &str) -> Result<Option<PaymentIntent>, GatewayError> {
        self.get(
            &format!("{}/{id}", self.intents_url),
            &[("expand[]", intents::BALANCE_TRANSACTION)],
            intents::payment_intent,
        )
    }

    fn refund(&self, request: &RefundRequest) -> Result<Refund, GatewayError> {
        self.post(
            &self.refunds_url,
            &request.idempotency_key,
            refunds::refund_form(request),
            |body, _replayed| refunds::refund(body),
        )
    }

    fn refunds_of(&self, payment: &Payment) -> Result<Vec<Refund>, GatewayError> {
        Ok(self
            .get(
                &self.refunds_url,
                &refunds::list_query(payment),
                refunds::refund_list,
            )?
            .unwrap_or_default())
    }

    fn list_intents(&self, request: &ListIntents) -> Result<IntentPage, GatewayError> {
        let query = intents::list_query(request);
        self.get_page(&self.intents_url, &query, intents::intent_page)
    }

    fn search_intents(&self, metadata: &[(&str, &str)]) -> Result<IntentPage, GatewayError> {
        let url = format!("{}/search", self.intents_url);
        let query = intents::search_query(metadata);
        self.get_page(&url, &query, intents::intent_page)
    }

    fn list_balance_transactions(
        &self,
        request: &ListBalanceTransactions,
    ) -> Result<BalanceTransactionPage, GatewayError> {
        let query = balance_transactions::list_query(request);
        self.get_page(
            &self.balance_transactions_url,
            &query,
            balance_transactions::page,
        )
    }

    fn create_account(&self, request: &CreateAccount) -> Result<Account, GatewayError> {
        self.post(
            &self.accounts_url,
            &request.idempotency_key,
            accounts::create_form(request),
            |body, _replayed| accounts::account(body),
        )
    }

    fn list_accounts(&self, request: &ListAccounts) -> Result<AccountPage, GatewayError> {
        let query = accounts::list_query(request);
        self.get_page(&self.accounts_url, &query, accounts::page)
    }

    fn retrieve_account(&self, id: &str) -> Result<Option<Account>, GatewayError> {
        self.get(
            &format!("{}/{id}", self.accounts_url),
            &[],
            accounts::account,
        )
    }

    fn create_account_link(
        &self,
        request: &CreateAccountLink,
    ) -> Result<AccountLink, GatewayError> {
        self.post(
            &self.account_links_url,
            &request.idempotency_key,
            accounts::link_form(request),
            |body, _replayed| accounts::account_link(body),
        )
    }

    fn create_transfer(&self, request: &CreateTransfer) -> Result<Transfer, GatewayError> {
        self.post(
            &self.transfers_url,
            &request.idempotency_key,
            transfers::transfer_form(request),
            |body, _replayed| transfers::transfer(body),
        )
    }

    fn list_transfers(&self, request: &ListTransfers) -> Result<TransferPage, GatewayError> {
        let query = transfers::list_query(request);
        self.get_page(&self.transfers_url, &query, transfers::page)
    }

    fn create_transfer_reversal(
        &self,
        request: &CreateTransferReversal,
    ) -> Result<TransferReversal, GatewayError> {
        self.post(
            &format!("{}/{}/reversals", self.transfers_url, request.transfer),
            &request.idempotency_key,
            transfers::reversal_form(request),
            |body, _replayed| transfers::reversal(body),
        )
    }

    fn list_transfer_reversals(
        &self,
        request: &ListTransferReversals,
    ) -> Result<TransferReversalPage, GatewayError> {
        let url = format!("{}/{}/reversals", self.transfers_url, request.transfer);
        let query = transfers::reversal_list_query(request);
        self.get_page(&url, &query, transfers::reversal_page)
    }

    /// A 404 is no answer: a balance is never missing.
    fn retrieve_balance(&self, account: &str) -> Result<Balance, GatewayError> {
        self.get_as(Some(account), &self.balance_url, &[], transfers::balance)?
            .ok_or_else(|| GatewayError::Unavailable {
                reason: format!("Stripe answered 404 to GET {}", self.balance_url),
                retry_after: None,
            })
    }
}

impl StripeGateway {
    /// A page of a list, read by `read`. A 404 is no answer for a list: not
    /// Stripe at `STRIPE_API_BASE`, or a starting point (or the transfer
    /// whose reversals are listed) Stripe does not have; it proves nothing.
    fn get_page<T>(
        &self,
        url: &str,
        query: &[(&'static str, String)],
        read: impl FnOnce(&[u8]) -> Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.get(url, &query, read)?
            .ok_or_else(|| GatewayError::Unavailable {
                reason: format!("Stripe answered 404 to GET {url}"),
                retry_after: None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_api_key() {
        let gateway = StripeGateway::new(&StripeSettings {
            api_key: Some("sk_live_TopSecret123".to_owned().into()),
            ..StripeSettings::default()
        })
        .unwrap();
        let shown = format!("{gateway:?}");
        assert!(!shown.contains("TopSecret"), "{shown}");
        assert!(
            shown.contains("https://api.stripe.com/v1/payment_intents"),
            "{shown}"
        );
    }
}
