//! Problems as actix responses.

use actix_web::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::service_error::ServiceError;
use crate::wire::problem::{Problem, PROBLEM_CONTENT_TYPE};

impl ResponseError for Problem {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status()).expect("problem statuses are valid")
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((CONTENT_TYPE, PROBLEM_CONTENT_TYPE));
        for (name, value) in self.headers() {
            let name = HeaderName::try_from(*name);
            if let (Ok(name), Ok(value)) = (name, HeaderValue::try_from(value.as_str())) {
                response.insert_header((name, value));
            }
        }
        response.body(self.body())
    }
}

impl From<actix_web::error::BlockingError> for Problem {
    fn from(err: actix_web::error::BlockingError) -> Self {
        ServiceError::Internal(anyhow::anyhow!("blocking task failed: {err}")).into()
    }
}
