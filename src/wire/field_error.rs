//! The schema of a rejected field. `FieldError` itself is made by the
//! validation at the bottom of the service, which knows no schema.

use std::borrow::Cow;

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::validation::FieldError;

impl PartialSchema for FieldError {
    fn schema() -> RefOr<Schema> {
        let text = || ObjectBuilder::new().schema_type(Type::String);
        ObjectBuilder::new()
            .description(Some(
                "One rejected field of a request, as it appears in a problem's `errors`.",
            ))
            .property("field", text())
            .required("field")
            .property("message", text())
            .required("message")
            .into()
    }
}

impl ToSchema for FieldError {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("FieldError")
    }
}
