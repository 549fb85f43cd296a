//! The contract's transfers, run against every gateway as the rest of it
//! is: a driver's share sent from its source charge once per key, listed
//! as reconciliation lists it, refused as Stripe refuses it; its reversals
//! taken from the available balance only, and listed as reconciliation
//! lists them; and the connected account's balance, moved on and paid out
//! by the doubles' test controls.

use chrono::{Duration, Utc};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::payments::{
    Balance, BalanceAmount, CaptureMethod, CreateIntent, CreateTransfer, CreateTransferReversal,
    GatewayError, ListTransferReversals, ListTransfers, Transfer, TransferReversalPage,
};
use ridepay_doubles::accounts;

use super::contract::{
    gateway_contract, hold, made_account, Gateway, GatewayUnderTest, Simulated, StripeOverHttp,
};
use crate::common::database::count;
use crate::common::gateway::intent_request;

/// A driver's account whose `transfers` capability is active.
fn payable_account(under_test: &impl GatewayUnderTest, gateway: &Gateway) -> String {
    let account = made_account(gateway);
    accounts::activate(&mut under_test.records(), &account.id).unwrap();
    account.id
}

/// A fare of 2000 eur paid at once, whose PaymentIntent names `group`.
fn paid_charge(gateway: &Gateway, key: &str, group: Option<&str>) -> (String, String) {
    let intent = gateway
        .create_intent(&CreateIntent {
            transfer_group: group.map(str::to_owned),
            ..intent_request(key, "pm_card_visa", CaptureMethod::Automatic)
        })
        .unwrap();
    (
        intent.id,
        intent.latest_charge.expect("a paid intent has its charge"),
    )
}

fn transfer(key: &str, destination: &str, charge: &str, cents: i64) -> CreateTransfer {
    CreateTransfer {
        idempotency_key: key.to_owned(),
        amount_cents: cents,
        currency: "eur".to_owned(),
        destination: destination.to_owned(),
        source_transaction: charge.to_owned(),
        metadata: vec![("ridepay_key".to_owned(), key.to_owned())],
    }
}

fn reversal(key: &str, transfer: &str, cents: i64) -> CreateTransferReversal {
    CreateTransferReversal {
        idempotency_key: key.to_owned(),
        transfer: transfer.to_owned(),
        amount_cents: cents,
        metadata: vec![("ridepay_key".to_owned(), key.to_owned())],
    }
}

fn transfers_made(under_test: &impl GatewayUnderTest) -> i64 {
    count(&mut under_test.records(), "simulated_transfers")
}

fn reversals_made(under_test: &impl GatewayUnderTest) -> i64 {
    count(&mut under_test.records(), "simulated_transfer_reversals")
}

/// The ids of a list's transfers, in its order.
fn ids(gateway: &Gateway, request: &ListTransfers) -> (Vec<String>, bool) {
    let page = gateway.list_transfers(request).unwrap();
    let ids = page.transfers.iter().map(|t| t.id.clone()).collect();
    (ids, page.has_more)
}

fn refused_with(result: Result<impl std::fmt::Debug, GatewayError>, code: &str) {
    assert!(
        matches!(&result, Err(GatewayError::Rejected { message }) if message.contains(code)),
        "{code}: {result:?}"
    );
}

/// A transfer from a source charge: Stripe's object, with the charge's
/// `transfer_group` (the PaymentIntent's, else `group_` and its id); the
/// same key gives it again and other parameters under it are refused; a
/// list finds it at once by destination, `created[gte]` and group, newest
/// first, page by page.
fn a_transfer_is_made_once_per_key_and_listed_by_destination_created_and_group(
    under_test: &impl GatewayUnderTest,
) {
    let gateway = under_test.healthy();
    let driver = payable_account(under_test, gateway.as_ref());
    let (_, grouped) = paid_charge(gateway.as_ref(), "fare", Some("ridepay-fare"));
    let (ungrouped_intent, ungrouped) = paid_charge(gateway.as_ref(), "tip", None);
    let since = Utc::now() - Duration::seconds(1);

    let made = gateway
        .create_transfer(&transfer("share", &driver, &grouped, 1600))
        .unwrap();
    let again = gateway
        .create_transfer(&transfer("share", &driver, &grouped, 1600))
        .unwrap();
    let other = gateway.create_transfer(&transfer("share", &driver, &grouped, 1500));
    let tip = gateway
        .create_transfer(&transfer("tip share", &driver, &ungrouped, 2000))
        .unwrap();

    assert!(made.id.starts_with("tr_"), "{made:?}");
    assert_eq!(
        (
            made.amount_cents,
            made.amount_reversed_cents,
            made.currency.as_str(),
            made.destination.as_str(),
            made.source_transaction.as_deref(),
            made.transfer_group.as_deref(),
            made.reversed,
            made.reversals.len(),
        ),
        (
            1600,
            0,
            "eur",
            driver.as_str(),
            Some(grouped.as_str()),
            Some("ridepay-fare"),
            false,
            0
        )
    );
    assert_eq!(made.metadata["ridepay_key"], "share");
    assert!(made.created >= since.with_timezone(&Utc) - Duration::seconds(1));
    assert_eq!(again, made);
    assert!(
        matches!(other, Err(GatewayError::Misconfigured { .. })),
        "{other:?}"
    );
    assert_eq!(
        tip.transfer_group,
        Some(format!("group_{ungrouped_intent}"))
    );
    assert_eq!(transfers_made(under_test), 2);

    let to_driver = ListTransfers::to_since(&driver, since);
    assert_eq!(
        ids(gateway.as_ref(), &to_driver),
        (vec![tip.id.clone(), made.id.clone()], false)
    );
    let first = ListTransfers {
        limit: 1,
        ..to_driver.clone()
    };
    let page = gateway.list_transfers(&first).unwrap();
    let next = first.after(&page).expect("a page follows");
    assert_eq!(ids(gateway.as_ref(), &next), (vec![made.id.clone()], false));
    assert_eq!(page.transfers, vec![tip]);
    let of_group = ListTransfers {
        transfer_group: Some("ridepay-fare".to_owned()),
        ..to_driver.clone()
    };
    assert_eq!(
        gateway.list_transfers(&of_group).unwrap().transfers,
        vec![made]
    );
    let later = ListTransfers::to_since(&driver, Utc::now() + Duration::hours(1));
    assert_eq!(ids(gateway.as_ref(), &later), (vec![], false));
    let elsewhere = ListTransfers::to_since(&made_other_account(gateway.as_ref()), since);
    assert_eq!(ids(gateway.as_ref(), &elsewhere), (vec![], false));
}

fn made_other_account(gateway: &Gateway) -> String {
    gateway
        .create_account(&ridepay::payments::CreateAccount {
            idempotency_key: "another driver".to_owned(),
            email: "another@example.com".to_owned(),
            country: "FR".to_owned(),
            metadata: Vec::new(),
        })
        .unwrap()
        .id
}

/// Stripe's refusals, each kept under its key and making nothing: a
/// destination it does not hold or whose `transfers` capability is not
/// active, a source charge it does not hold or that has not taken money,
/// another currency than the charge's, and more than the charge has left
/// untransferred (what reversals gave back counts as left, and no more).
fn transfers_are_refused_as_stripe_refuses_them(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let inactive = made_other_account(gateway.as_ref());
    let driver = payable_account(under_test, gateway.as_ref());
    let (_, charge) = paid_charge(gateway.as_ref(), "fare", Some("ridepay-fare"));
    let held = hold(gateway.as_ref(), "held", "pm_card_visa");
    let held_charge = held.latest_charge.expect("a hold has its charge");
    let send = |key: &str, destination: &str, charge: &str, cents: i64| {
        gateway.create_transfer(&transfer(key, destination, charge, cents))
    };

    refused_with(
        send("inactive", &inactive, &charge, 100),
        "insufficient_capabilities_for_transfer",
    );
    refused_with(
        send("inactive", &inactive, &charge, 100),
        "insufficient_capabilities_for_transfer",
    );
    refused_with(
        send("nobody", "acct_none", &charge, 100),
        "No such destination",
    );
    refused_with(send("no charge", &driver, "ch_none", 100), "No such charge");
    refused_with(
        send("from hold", &driver, &held_charge, 100),
        "parameter_invalid",
    );
    refused_with(
        gateway.create_transfer(&CreateTransfer {
            currency: "usd".to_owned(),
            ..transfer("dollars", &driver, &charge, 100)
        }),
        "currency",
    );
    refused_with(send("too much", &driver, &charge, 2001), "amount_too_large");
    assert_eq!(transfers_made(under_test), 0);

    let most = send("most", &driver, &charge, 1500).unwrap();
    refused_with(send("beyond", &driver, &charge, 501), "amount_too_large");
    let rest = send("rest", &driver, &charge, 500);
    assert!(rest.is_ok(), "{rest:?}");
    accounts::make_available(&mut under_test.records(), &driver).unwrap();
    gateway
        .create_transfer_reversal(&reversal("back", &most.id, 300))
        .unwrap();
    refused_with(
        send("beyond back", &driver, &charge, 301),
        "amount_too_large",
    );
    let again = send("again", &driver, &charge, 300);
    assert!(again.is_ok(), "{again:?}");
    assert_eq!(transfers_made(under_test), 3);
}

fn amounts(currency: &str, cents: i64) -> Vec<BalanceAmount> {
    vec![BalanceAmount {
        currency: currency.to_owned(),
        amount_cents: cents,
    }]
}

/// A transfer's funds are pending, then available once the control moves
/// the clock on; a reversal takes from what is available and is refused
/// with `balance_insufficient` when that is short, or beyond what the
/// transfer has left; a payout empties what is available. A new account's
/// balance is its country's currency, empty.
fn a_reversal_takes_from_the_available_balance_only(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let driver = payable_account(under_test, gateway.as_ref());
    let empty = gateway.retrieve_balance(&driver).unwrap();
    let (_, charge) = paid_charge(gateway.as_ref(), "fare", Some("ridepay-fare"));
    let share = gateway
        .create_transfer(&transfer("share", &driver, &charge, 1600))
        .unwrap();
    let balance = || gateway.retrieve_balance(&driver).unwrap();
    let reverse =
        |key: &str, cents: i64| gateway.create_transfer_reversal(&reversal(key, &share.id, cents));

    assert_eq!(
        empty,
        Balance {
            available: amounts("usd", 0),
            pending: amounts("usd", 0),
        }
    );
    assert_eq!(
        balance(),
        Balance {
            available: amounts("eur", 0),
            pending: amounts("eur", 1600),
        }
    );
    let short = reverse("early", 100);
    assert!(
        matches!(&short, Err(err) if err.is_balance_insufficient()),
        "{short:?}"
    );

    let made_available = accounts::make_available(&mut under_test.records(), &driver).unwrap();
    let back = reverse("refund part", 500).unwrap();
    let back_again = reverse("refund part", 500).unwrap();
    let beyond = reverse("beyond", 1101);

    assert_eq!(
        made_available,
        Balance {
            available: amounts("eur", 1600),
            pending: amounts("eur", 0),
        }
    );
    assert!(back.id.starts_with("trr_"), "{back:?}");
    assert_eq!(
        (
            back.transfer.as_str(),
            back.amount_cents,
            back.currency.as_str()
        ),
        (share.id.as_str(), 500, "eur")
    );
    assert_eq!(back.metadata["ridepay_key"], "refund part");
    assert_eq!(back_again, back);
    refused_with(beyond, "amount_too_large");
    assert_eq!(balance().available_in("eur"), 1100);
    let listed: Transfer = gateway
        .list_transfers(&ListTransfers::to_since(&driver, share.created))
        .unwrap()
        .transfers
        .remove(0);
    assert_eq!(
        (
            listed.amount_reversed_cents,
            listed.reversible_cents(),
            listed.reversed
        ),
        (500, 1100, false)
    );
    assert_eq!(listed.reversals, vec![back]);

    let paid_out = accounts::pay_out(&mut under_test.records(), &driver).unwrap();
    let after_payout = reverse("after payout", 100);

    assert_eq!(paid_out.available_in("eur"), 0);
    assert!(
        matches!(&after_payout, Err(err) if err.is_balance_insufficient()),
        "{after_payout:?}"
    );
    assert_eq!(reversals_made(under_test), 1);
    assert!(
        matches!(
            gateway.retrieve_balance("acct_none"),
            Err(GatewayError::Rejected { .. })
        ),
        "an account the gateway does not hold has no balance"
    );
}

/// A transfer's reversals, listed at once, newest first, page by page, and
/// only its own; a transfer the gateway does not hold is `Unavailable`, as
/// Stripe's 404 to any list: it proves nothing.
fn a_transfers_reversals_are_listed_newest_first_page_by_page(under_test: &impl GatewayUnderTest) {
    let gateway = under_test.healthy();
    let driver = payable_account(under_test, gateway.as_ref());
    let (_, charge) = paid_charge(gateway.as_ref(), "fare", None);
    let share = gateway
        .create_transfer(&transfer("share", &driver, &charge, 1600))
        .unwrap();
    let other = gateway
        .create_transfer(&transfer("other share", &driver, &charge, 400))
        .unwrap();
    let all = ListTransferReversals::of(&share.id);
    let none_yet = gateway.list_transfer_reversals(&all).unwrap();
    accounts::make_available(&mut under_test.records(), &driver).unwrap();
    let first = gateway
        .create_transfer_reversal(&reversal("first back", &share.id, 300))
        .unwrap();
    let second = gateway
        .create_transfer_reversal(&reversal("second back", &share.id, 200))
        .unwrap();
    gateway
        .create_transfer_reversal(&reversal("other back", &other.id, 100))
        .unwrap();

    let listed = gateway.list_transfer_reversals(&all).unwrap();
    let one = ListTransferReversals {
        limit: 1,
        ..all.clone()
    };
    let page = gateway.list_transfer_reversals(&one).unwrap();
    let next = one.after(&page).expect("a page follows");
    let last = gateway.list_transfer_reversals(&next).unwrap();
    let unknown = gateway.list_transfer_reversals(&ListTransferReversals::of("tr_none"));

    assert_eq!(none_yet, TransferReversalPage::default());
    assert_eq!(
        listed,
        TransferReversalPage {
            reversals: vec![second.clone(), first.clone()],
            has_more: false,
        }
    );
    assert_eq!(
        page,
        TransferReversalPage {
            reversals: vec![second],
            has_more: true,
        }
    );
    assert_eq!(
        last,
        TransferReversalPage {
            reversals: vec![first],
            has_more: false,
        }
    );
    assert_eq!(next.after(&last), None);
    assert!(
        matches!(unknown, Err(GatewayError::Unavailable { .. })),
        "{unknown:?}"
    );
}

/// Saved 500s and lost answers, as every call that acts has them: a
/// transfer or a reversal whose answer was lost is given by the retry under
/// its key, made once; one whose 500 was saved answers every retry with it
/// and is made at most once, which the list of its transfer's reversals
/// tells.
fn transfers_and_reversals_are_made_at_most_once_through_saved_500s_and_lost_answers(
    under_test: &impl GatewayUnderTest,
) {
    let healthy = under_test.healthy();
    let driver = payable_account(under_test, healthy.as_ref());
    let (_, charge) = paid_charge(healthy.as_ref(), "fare", None);
    let lossy = under_test.gateway(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..Default::default()
    });
    let saving = under_test.gateway(SimulatedGatewaySettings {
        saved_error_rate: 1.0,
        ..Default::default()
    });

    let lost = lossy.create_transfer(&transfer("lost", &driver, &charge, 1000));
    let found = healthy
        .create_transfer(&transfer("lost", &driver, &charge, 1000))
        .unwrap();
    accounts::make_available(&mut under_test.records(), &driver).unwrap();
    let lost_reversal = lossy.create_transfer_reversal(&reversal("lost back", &found.id, 100));
    let found_reversal = healthy
        .create_transfer_reversal(&reversal("lost back", &found.id, 100))
        .unwrap();

    assert!(
        matches!(lost, Err(GatewayError::OutcomeUnknown { .. })),
        "{lost:?}"
    );
    assert!(
        matches!(lost_reversal, Err(GatewayError::OutcomeUnknown { .. })),
        "{lost_reversal:?}"
    );
    assert_eq!(found_reversal.amount_cents, 100);
    assert_eq!(
        (transfers_made(under_test), reversals_made(under_test)),
        (1, 1)
    );

    let saved = saving.create_transfer(&transfer("saved", &driver, &charge, 100));
    let saved_reversal = saving.create_transfer_reversal(&reversal("saved back", &found.id, 100));
    assert!(
        matches!(saved, Err(GatewayError::OutcomeUnknown { .. })),
        "{saved:?}"
    );
    assert!(
        matches!(saved_reversal, Err(GatewayError::OutcomeUnknown { .. })),
        "{saved_reversal:?}"
    );
    for retry in [&saving, &healthy] {
        let again = retry.create_transfer(&transfer("saved", &driver, &charge, 100));
        let again_reversal =
            retry.create_transfer_reversal(&reversal("saved back", &found.id, 100));
        assert!(
            matches!(again, Err(GatewayError::SavedFailure { .. })),
            "{again:?}"
        );
        assert!(
            matches!(again_reversal, Err(GatewayError::SavedFailure { .. })),
            "{again_reversal:?}"
        );
    }
    assert!(transfers_made(under_test) <= 2);
    assert!(reversals_made(under_test) <= 2);
    let listed = healthy
        .list_transfer_reversals(&ListTransferReversals::of(&found.id))
        .unwrap()
        .reversals;
    let keys: Vec<&str> = listed
        .iter()
        .map(|reversal| reversal.metadata["ridepay_key"].as_str())
        .collect();
    let saved_made = reversals_made(under_test) == 2;
    let expected = if saved_made {
        vec!["saved back", "lost back"]
    } else {
        vec!["lost back"]
    };
    assert_eq!(keys, expected);
    assert_eq!(listed.last(), Some(&found_reversal));
}

macro_rules! every_transfer_scenario {
    ($kind:ident, $under_test:ident) => {
        gateway_contract!(
            $kind, $under_test:
            a_transfer_is_made_once_per_key_and_listed_by_destination_created_and_group,
            transfers_are_refused_as_stripe_refuses_them,
            a_reversal_takes_from_the_available_balance_only,
            a_transfers_reversals_are_listed_newest_first_page_by_page,
            transfers_and_reversals_are_made_at_most_once_through_saved_500s_and_lost_answers,
        );
    };
}

every_transfer_scenario!(simulated, Simulated);
every_transfer_scenario!(stripe_over_http, StripeOverHttp);
