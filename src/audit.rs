//! The audit trail: what ridepay did, written in the same transaction as the
//! change it describes.

use diesel::prelude::*;
use serde_json::Value;

use crate::ids::UserId;
use crate::schema::audit_records;

pub fn record(
    conn: &mut PgConnection,
    user_id: UserId,
    action: &str,
    resource_type: &str,
    resource_id: i64,
    data: Value,
) -> QueryResult<()> {
    diesel::insert_into(audit_records::table)
        .values((
            audit_records::user_id.eq(user_id),
            audit_records::action.eq(action),
            audit_records::resource_type.eq(resource_type),
            audit_records::resource_id.eq(resource_id),
            audit_records::data.eq(data),
        ))
        .execute(conn)?;
    Ok(())
}
