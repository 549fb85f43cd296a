//! `GET /api/ledger/accounts` and `GET /api/ledger/transactions`: the
//! platform's key only (a rider's is 403 `forbidden`).

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::{page_size, ListQuery};
use crate::http::reading::as_caller;
use crate::http::routing::method_not_allowed;
use crate::ledger::reads::{self, TransactionFilter};
use crate::public_ids::{LedgerTransactionPublicId, PublicId, RidePublicId};
use crate::service_error::ServiceError;
use crate::validation::FieldError;
use crate::wire::ledger::{AccountJson, TransactionJson};
use crate::wire::problem::Problem;

/// The routes' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(list_accounts, list_transactions),
    components(schemas(crate::wire::ledger::EntryJson))
)]
pub struct Api;

pub fn routes(cfg: &mut web::ServiceConfig) {
    for (path, handler) in [
        ("/ledger/accounts", web::get().to(list_accounts)),
        ("/ledger/transactions", web::get().to(list_transactions)),
    ] {
        cfg.service(
            web::resource(path)
                .route(handler)
                .default_service(method_not_allowed("GET")),
        );
    }
}

/// A page of accounts, in the order of their codes.
#[derive(Serialize, ToSchema)]
#[schema(as = LedgerAccountPage)]
pub struct AccountPage {
    data: Vec<AccountJson>,
    has_more: bool,
}

/// The accounts list's query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccountsQuery {
    /// 1 to 100, default 20.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// The code of the last account of the page before.
    starting_after: Option<String>,
}

/// The ledger's accounts with their balances.
#[utoipa::path(
    get,
    path = "/api/ledger/accounts",
    tag = "ledger",
    params(AccountsQuery),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "A page of accounts", body = AccountPage),
        (status = 400, description = "Invalid `limit`", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_accounts(
    caller: Caller,
    query: web::Query<AccountsQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let AccountsQuery {
        limit,
        starting_after,
    } = query.into_inner();
    let (data, has_more) = as_caller(context, caller, move |conn, user| {
        let limit = page_size(limit).map_err(|error| ServiceError::Invalid(vec![error]))?;
        reads::accounts_page(conn, &user, limit, starting_after)
    })
    .await?;
    Ok(HttpResponse::Ok().json(AccountPage { data, has_more }))
}

/// A page of transactions, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = LedgerTransactionPage)]
pub struct TransactionPage {
    data: Vec<TransactionJson>,
    has_more: bool,
}

/// What the transactions list is narrowed to.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TransactionsQuery {
    /// A ride's transactions only (`ride_...`).
    ride_id: Option<String>,
    /// The transactions with an entry on this account (`gateway:usd`).
    account: Option<String>,
}

/// The ledger's transactions with their entries.
#[utoipa::path(
    get,
    path = "/api/ledger/transactions",
    tag = "ledger",
    params(TransactionsQuery, ListQuery),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "A page of transactions", body = TransactionPage),
        (status = 400, description = "Invalid `limit` or cursor, or a `ride_id` or `account` that names nothing", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_transactions(
    caller: Caller,
    narrowed: web::Query<TransactionsQuery>,
    list: web::Query<ListQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let TransactionsQuery { ride_id, account } = narrowed.into_inner();
    let list = list.into_inner();
    let (data, has_more) = as_caller(context, caller, move |conn, user| {
        let (limit, cursor) = list.checked::<LedgerTransactionPublicId>()?;
        let ride = match ride_id {
            None => None,
            Some(text) => Some(RidePublicId::parse(&text).ok_or_else(|| {
                ServiceError::Invalid(vec![FieldError::new("ride_id", "must be a ride_ id")])
            })?),
        };
        let filter = TransactionFilter { ride, account };
        reads::transactions_page(conn, &user, filter, limit, cursor)
    })
    .await?;
    Ok(HttpResponse::Ok().json(TransactionPage { data, has_more }))
}
