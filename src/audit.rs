//! The audit trail: what ridepay did, written in the same transaction as the
//! change it describes.

use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::sql_types::{BigInt, Jsonb, Text};
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

/// The audit record of the row a statement changes, sent with it
/// (`db::recorded`): the resource is the changed row, by its id.
pub struct OfChanged {
    user_id: UserId,
    action: String,
    resource_type: &'static str,
    data: Value,
}

pub fn of_changed(
    user_id: UserId,
    action: impl Into<String>,
    resource_type: &'static str,
    data: Value,
) -> OfChanged {
    OfChanged {
        user_id,
        action: action.into(),
        resource_type,
        data,
    }
}

impl QueryFragment<Pg> for OfChanged {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO audit_records (user_id, action, resource_type, resource_id, data) SELECT ",
        );
        out.push_bind_param::<BigInt, _>(&self.user_id)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&self.action)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(self.resource_type)?;
        out.push_sql(", changed.id, ");
        out.push_bind_param::<Jsonb, _>(&self.data)?;
        out.push_sql(" FROM changed");
        Ok(())
    }
}
