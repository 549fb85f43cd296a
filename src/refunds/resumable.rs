//! Lets the completer finish refund requests whose client went away.

use std::sync::Arc;

use super::recovery_point::RecoveryPoint;
use super::request::RefundParams;
use super::service;
use crate::context::ServiceContext;
use crate::idempotency::completer::{awaits_external_effect, ClaimedKey, Resumable};
use crate::idempotency::{KeyRecord, StoredResponse};
use crate::service_error::ServiceError;

/// Whether `path` is `/api/rides/{id}/refunds`, as keys record it.
pub fn is_refunds_path(path: &str) -> bool {
    path.strip_prefix("/api/rides/")
        .and_then(|rest| rest.strip_suffix("/refunds"))
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

pub struct RefundRequests {
    context: Arc<ServiceContext>,
}

impl RefundRequests {
    pub fn new(context: Arc<ServiceContext>) -> Self {
        RefundRequests { context }
    }
}

impl Resumable for RefundRequests {
    fn owns(&self, record: &KeyRecord) -> bool {
        record.request_method == "POST" && is_refunds_path(&record.request_path)
    }

    fn awaits_external_effect(&self, record: &KeyRecord) -> Result<bool, ServiceError> {
        awaits_external_effect::<RecoveryPoint>(record)
    }

    fn resume(&self, key: ClaimedKey) -> Result<StoredResponse, ServiceError> {
        let params: RefundParams = key.params()?;
        service::resume(&self.context, key.lease::<RecoveryPoint>()?, &params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refund_paths_are_owned() {
        assert!(is_refunds_path("/api/rides/7/refunds"));
        for other in [
            "/api/rides",
            "/api/rides/7",
            "/api/rides//refunds",
            "/api/rides/x/refunds",
        ] {
            assert!(!is_refunds_path(other), "{other}");
        }
    }
}
