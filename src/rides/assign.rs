//! `POST /api/rides/{id}/driver` on the idempotency flow (the platform's
//! key): the ride's driver, written whole in the claim's transaction with
//! the commission fixed then (`PLATFORM_COMMISSION_BPS`). The money the ride
//! has captured already is reallocated to the driver and the transfers owed
//! recorded by the database (`ridepay_driver_owed`), as a capture on a ride
//! that has its driver does.

use diesel::prelude::*;
use diesel::sql_types::BigInt;
use serde::{Deserialize, Serialize};

use crate::audit;
use crate::context::ServiceContext;
use crate::drivers::model::{self as drivers, DriverStatus};
use crate::drivers::pay;
use crate::idempotency::{Endpoint, Lease, Transition, TransitionOf};
use crate::public_ids::{DriverPublicId, PathId, PublicId, RidePublicId};
use crate::rides::model::{Ride, RideStatus};
use crate::rides::reads;
use crate::schema::{ride_drivers, rides};
use crate::service_error::{Refusal, ServiceError};
use crate::users::Role;
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::driver::AssignDriverBody;

crate::recovery_points! {
    /// An assignment is written and answered at once.
    pub enum RecoveryPoint for "rides.assign_driver" {}
}

/// The statuses a ride may be given its driver in: a ride still to be paid
/// or paid, or cancelled with a fee (which the driver shares).
const ASSIGNABLE: [RideStatus; 5] = [
    RideStatus::Authorized,
    RideStatus::RequiresAction,
    RideStatus::Processing,
    RideStatus::Captured,
    RideStatus::Canceled,
];

/// A validated assignment. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssignParams {
    // In sorted order, as the canonical form needs.
    pub driver_id: DriverPublicId,
    pub ride_id: PathId<RidePublicId>,
}

impl AssignParams {
    pub fn parse(
        ride_id: PathId<RidePublicId>,
        body: &[u8],
    ) -> Result<AssignParams, Vec<FieldError>> {
        let body: AssignDriverBody = parse_body(body, expected).map_err(|err| vec![err])?;
        let driver_id = match body.driver_id {
            None => Err("is required"),
            Some(text) => DriverPublicId::parse(&text).ok_or("must be a drv_ id"),
        }
        .map_err(|message| vec![FieldError::new("driver_id", message)])?;
        Ok(AssignParams { driver_id, ride_id })
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "driver_id").then_some("must be a string")
}

pub struct AssignEndpoint;

impl Endpoint for AssignEndpoint {
    type Point = RecoveryPoint;
    type Params = AssignParams;
    type Context = ServiceContext;
    type Known = ();
    type Answer = ();

    const CALLERS: &'static [Role] = &[Role::Platform];

    /// Started -> Finished: the driver assigned and what they are owed
    /// recorded; refused here, nothing is written and the key not consumed.
    fn start(
        cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &Lease<RecoveryPoint>,
        params: &AssignParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let ride = assign(cx, conn, lease, params)?;
        let answer = reads::platform_view(&ride, pay::of_ride(conn, ride.id)?);
        Ok(Transition::Finish(wire::answer::ok(answer.body())))
    }

    /// Nothing is left to resume: the key finishes where it starts.
    fn load(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &Lease<RecoveryPoint>,
        _params: &AssignParams,
        _point: RecoveryPoint,
    ) -> Result<(), ServiceError> {
        Ok(())
    }
}

/// The ride, locked (its changes, a capture among them, wait for this
/// transaction, so its charges are all seen), given its driver.
fn assign(
    cx: &ServiceContext,
    conn: &mut PgConnection,
    lease: &Lease<RecoveryPoint>,
    params: &AssignParams,
) -> Result<Ride, ServiceError> {
    // The platform names rides by their public ids.
    let public_id = params.ride_id.public().ok_or(ServiceError::NotFound)?;
    let ride = rides::table
        .filter(rides::public_id.eq(public_id))
        .select(Ride::as_select())
        .for_update()
        .first(conn)
        .optional()?
        .ok_or(ServiceError::NotFound)?;
    let refused = |detail: String| ServiceError::refused(Refusal::InvalidRideState, detail);
    let paid_or_to_be = ASSIGNABLE.contains(&ride.status)
        && (ride.status != RideStatus::Canceled || ride.amount_captured_cents > 0);
    if !paid_or_to_be {
        return Err(refused(format!(
            "ride {} is {}: a driver is assigned to a ride to be paid or paid, or cancelled \
             with a fee",
            ride.public_id, ride.status
        )));
    }
    let assigned: Option<i64> = ride_drivers::table
        .find(ride.id)
        .select(ride_drivers::driver_id)
        .first(conn)
        .optional()?;
    if assigned.is_some() {
        return Err(refused(format!("ride {} has its driver", ride.public_id)));
    }
    // Locked before the ride's driver row refers to it: that reference
    // holds `FOR KEY SHARE` on the driver's row, which `ridepay_driver_owed`
    // raises to `FOR UPDATE`, and two assignments of one driver raising
    // their shares at once deadlock; locked first, they queue.
    let driver = drivers::find_locked(conn, params.driver_id)?.ok_or_else(|| {
        ServiceError::Invalid(vec![FieldError::new("driver_id", "names no driver")])
    })?;
    if driver.status != DriverStatus::Active {
        return Err(ServiceError::refused(
            Refusal::DriverNotPayable,
            format!(
                "driver {} is {}: only a driver whose account is active can be paid",
                driver.public_id, driver.status
            ),
        ));
    }
    diesel::insert_into(ride_drivers::table)
        .values((
            ride_drivers::ride_id.eq(ride.id),
            ride_drivers::driver_id.eq(driver.id),
            ride_drivers::commission_bps.eq(i32::from(cx.drivers.commission_bps)),
            ride_drivers::idempotency_key_id.eq(lease.key_id()),
        ))
        .execute(conn)?;
    diesel::sql_query(
        "SELECT ridepay_driver_owed(id) FROM charges WHERE ride_id = $1 ORDER BY created_at, id",
    )
    .bind::<BigInt, _>(ride.id)
    .execute(conn)?;
    audit::record(
        conn,
        lease.user_id(),
        "ride.driver_assigned",
        "ride",
        ride.id.0,
        serde_json::json!({ "driver_id": driver.public_id, "idempotency_key_id": lease.key_id() }),
    )?;
    Ok(ride)
}
