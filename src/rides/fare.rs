//! What a fare may be, for every endpoint that takes an amount: its
//! currencies and its bounds, in minor units.

pub const CURRENCIES: [&str; 3] = ["usd", "eur", "gbp"];
pub const MIN_AMOUNT_CENTS: i64 = 50;
pub const MAX_AMOUNT_CENTS: i64 = 1_000_000;
