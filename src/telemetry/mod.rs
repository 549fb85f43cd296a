//! What the service tells its operators: metrics, log lines and the request
//! id they carry. The bottom layer: it imports nothing of ridepay's.

pub mod log_throttle;
pub mod logging;
pub mod metrics;
pub mod request_id;
