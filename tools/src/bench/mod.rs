//! The benchmark: ridepay's five HTTP scenarios at several connection counts
//! against a release build and a private PostgreSQL, with pgbench baselines
//! run in the same session, written up as tables, ratios and plots.

pub mod baseline;
pub mod load;
pub mod measurement;
pub mod options;
pub mod pgbench;
pub mod plot;
pub mod report;
pub mod served;
pub mod session;

pub use options::Options;
pub use session::run;
