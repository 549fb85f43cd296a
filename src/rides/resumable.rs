//! Lets the completer finish ride requests whose client went away.

use std::sync::Arc;

use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use super::service;
use crate::context::ServiceContext;
use crate::idempotency::completer::{awaits_external_effect, ClaimedKey, Resumable};
use crate::idempotency::{KeyRecord, StoredResponse};
use crate::service_error::ServiceError;

/// The path of `POST /api/rides`, as keys record it.
pub const CREATE_RIDE_PATH: &str = "/api/rides";

pub struct RideRequests {
    context: Arc<ServiceContext>,
}

impl RideRequests {
    pub fn new(context: Arc<ServiceContext>) -> Self {
        RideRequests { context }
    }
}

impl Resumable for RideRequests {
    fn owns(&self, record: &KeyRecord) -> bool {
        record.request_method == "POST" && record.request_path == CREATE_RIDE_PATH
    }

    fn awaits_external_effect(&self, record: &KeyRecord) -> Result<bool, ServiceError> {
        awaits_external_effect::<RecoveryPoint>(record)
    }

    fn resume(&self, key: ClaimedKey) -> Result<StoredResponse, ServiceError> {
        let params: RideParams = key.params()?;
        service::resume(&self.context, key.lease::<RecoveryPoint>()?, &params)
    }
}
