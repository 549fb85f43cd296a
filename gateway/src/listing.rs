//! Listing and searching PaymentIntents: how reconciliation proves what the
//! gateway made, and finds what no ride records; and listing the balance
//! transactions, what the gateway moved in and out of the platform's
//! balance.

use chrono::{DateTime, Utc};

use super::intent::{BalanceTransaction, PaymentIntent};

/// `GET /v1/payment_intents`: those created at or after `created_gte`
/// (Stripe's `created[gte]`, whole seconds), of `customer` if given, newest
/// first, the page after the intent `starting_after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListIntents {
    pub created_gte: DateTime<Utc>,
    pub customer: Option<String>,
    pub starting_after: Option<String>,
    /// At most 100, Stripe's limit.
    pub limit: u8,
}

/// A page of PaymentIntents, and whether more follow it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IntentPage {
    pub intents: Vec<PaymentIntent>,
    pub has_more: bool,
}

impl ListIntents {
    /// Stripe's largest page.
    pub const MAX_LIMIT: u8 = 100;

    /// The first page of those created since `created_gte`.
    pub fn since(created_gte: DateTime<Utc>, customer: Option<String>) -> ListIntents {
        ListIntents {
            created_gte,
            customer,
            starting_after: None,
            limit: Self::MAX_LIMIT,
        }
    }

    /// The page after `page`, or `None` when it was the last.
    pub fn after(&self, page: &IntentPage) -> Option<ListIntents> {
        let last = page.intents.last().filter(|_| page.has_more)?;
        Some(ListIntents {
            starting_after: Some(last.id.clone()),
            ..self.clone()
        })
    }
}

/// `GET /v1/balance_transactions`: those created at or after `created_gte`
/// (all, when `None`), newest first, the page after the balance transaction
/// `starting_after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListBalanceTransactions {
    pub created_gte: Option<DateTime<Utc>>,
    /// Only those of this charge or refund (`ch_`, `re_`).
    pub source: Option<String>,
    pub starting_after: Option<String>,
    /// At most 100, Stripe's limit.
    pub limit: u8,
}

/// A movement of the platform's balance, as the gateway lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedBalanceTransaction {
    /// Stripe's `type`: `charge` (a captured charge, less its fee),
    /// `refund` (its amount and net negative, no fee), or one ridepay makes
    /// none of (`payout`, `adjustment`, ...).
    pub kind: String,
    /// The id of what moved the money (`ch_`, `re_`), when there is one.
    pub source: Option<String>,
    /// Whole seconds, as Stripe's `created`.
    pub created: DateTime<Utc>,
    pub transaction: BalanceTransaction,
}

/// A page of balance transactions, and whether more follow it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BalanceTransactionPage {
    pub transactions: Vec<ListedBalanceTransaction>,
    pub has_more: bool,
}

impl ListBalanceTransactions {
    /// The first page of those created since `created_gte`.
    pub fn since(created_gte: Option<DateTime<Utc>>) -> ListBalanceTransactions {
        ListBalanceTransactions {
            created_gte,
            source: None,
            starting_after: None,
            limit: ListIntents::MAX_LIMIT,
        }
    }

    /// Those of the charge or refund `source`.
    pub fn of_source(source: &str) -> ListBalanceTransactions {
        ListBalanceTransactions {
            source: Some(source.to_owned()),
            ..ListBalanceTransactions::since(None)
        }
    }

    /// The page after `page`, or `None` when it was the last.
    pub fn after(&self, page: &BalanceTransactionPage) -> Option<ListBalanceTransactions> {
        let last = page.transactions.last().filter(|_| page.has_more)?;
        Some(ListBalanceTransactions {
            starting_after: Some(last.transaction.id.clone()),
            ..self.clone()
        })
    }
}

/// A search query in Stripe's language for `metadata`'s pairs, joined by
/// `AND`: `metadata['ridepay_key']:'ab12'`. A quote or backslash in a value
/// is escaped as Stripe's query language wants.
pub fn metadata_query(metadata: &[(&str, &str)]) -> String {
    let quoted = |text: &str| text.replace('\\', "\\\\").replace('\'', "\\'");
    metadata
        .iter()
        .map(|(name, value)| format!("metadata['{}']:'{}'", quoted(name), quoted(value)))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// The pairs of a query `metadata_query` wrote; `None` for anything else,
/// which the doubles refuse as Stripe refuses a query it cannot parse.
pub fn parse_metadata_query(query: &str) -> Option<Vec<(String, String)>> {
    query
        .split(" AND ")
        .map(|clause| {
            let rest = clause.trim().strip_prefix("metadata['")?;
            let (name, rest) = split_quoted(rest)?;
            let rest = rest.strip_prefix("]:'")?;
            let (value, rest) = split_quoted(rest)?;
            rest.is_empty().then_some((name, value))
        })
        .collect()
}

/// The text up to the first unescaped `'`, unescaped, and what follows it.
fn split_quoted(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?.1),
            '\'' => return Some((out, &text[at + 1..])),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metadata_query_reads_back_as_its_pairs() {
        let pairs = [("ridepay_key", "ab12"), ("odd", "it's a \\ test")];
        let query = metadata_query(&pairs);
        assert_eq!(
            query,
            "metadata['ridepay_key']:'ab12' AND metadata['odd']:'it\\'s a \\\\ test'"
        );
        let parsed = parse_metadata_query(&query).unwrap();
        let expected: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(parsed, expected);
        for bad in [
            "status:'succeeded'",
            "metadata['a']:'b' OR metadata['c']:'d'",
            "metadata['a']:'b",
        ] {
            assert_eq!(parse_metadata_query(bad), None, "{bad}");
        }
    }
}
