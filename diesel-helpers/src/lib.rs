//! The Diesel helpers that the service and the gateway doubles share, as
//! crates.io keeps its own in a crate of their own: enums stored as `TEXT`
//! ([`text_enum!`]), statements kept prepared ([`CacheStatement`]), and the
//! database's clock ([`database_now`]).

mod cached;
mod text_enum;

#[cfg(debug_assertions)]
pub use cached::sql_text;
pub use cached::CacheStatement;

diesel::define_sql_function! {
    /// The database's clock. Lease ages, deadlines and backoffs are judged by
    /// it alone, so instances with skewed clocks agree. A function call, not
    /// raw SQL: Diesel never keeps a statement holding raw SQL prepared.
    #[sql_name = "now"]
    fn database_now() -> Timestamptz;
}
