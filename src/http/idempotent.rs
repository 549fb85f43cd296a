//! The HTTP face of the idempotency machinery: the request header and the
//! (replayed) response.

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse};
use futures_util::future::LocalBoxFuture;

use super::auth::Caller;
use super::body::{read_json, MAX_BODY_BYTES};
use super::request_id;
use crate::context::ServiceContext;
use crate::crash;
use crate::idempotency::{flow, Endpoint, IdempotencyKey, Outcome, StoredResponse};
use crate::service_error::ServiceError;
use crate::telemetry::metrics;
use crate::validation::FieldError;
use crate::wire::problem::{Problem, ProblemKind};

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The `idempotency_keys.request_path` column's limit.
const MAX_REQUEST_PATH_CHARS: usize = 2048;

/// The request's `Idempotency-Key`, or the 400 that says what is wrong with it.
pub fn idempotency_key(request: &HttpRequest) -> Result<IdempotencyKey, Problem> {
    let mut values = request.headers().get_all(IDEMPOTENCY_KEY);
    let value = values.next().ok_or_else(|| {
        Problem::new(
            ProblemKind::IdempotencyKeyMissing,
            "POST requests must carry an Idempotency-Key header",
        )
    })?;
    if values.next().is_some() {
        return Err(Problem::new(
            ProblemKind::IdempotencyKeyInvalid,
            "send exactly one Idempotency-Key header",
        ));
    }
    IdempotencyKey::parse(value.as_bytes())
        .map_err(|err| Problem::new(ProblemKind::IdempotencyKeyInvalid, err.to_string()))
}

/// The stored response as sent the first time, marked when it is a replay.
pub fn respond(response: StoredResponse, replayed: bool) -> HttpResponse {
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut builder = HttpResponse::build(status);
    for (name, value) in response.headers.0 {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            builder.insert_header((name, value));
        }
    }
    if replayed {
        builder.insert_header((IDEMPOTENT_REPLAYED, "true"));
    }
    metrics::idempotency_outcome(match (replayed, response.status) {
        (true, _) => "replayed",
        (false, 402) => "declined",
        (false, 400..=599) => "rejected",
        (false, _) => "created",
    });
    builder.body(response.body)
}

/// What the handler of every idempotent POST takes: the caller, whose
/// key the extractor checks before the body is read (401), the request
/// with its unread body, and the service.
pub struct IdempotentPost {
    caller: Caller,
    request: HttpRequest,
    payload: web::Payload,
    context: web::Data<ServiceContext>,
}

impl FromRequest for IdempotentPost {
    type Error = Problem;
    type Future = LocalBoxFuture<'static, Result<Self, Problem>>;

    fn from_request(request: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(request, payload);
        let body = web::Payload::from_request(request, payload).into_inner();
        let context = request
            .app_data::<web::Data<ServiceContext>>()
            .expect("the service is registered at start-up")
            .clone();
        let request = request.clone();
        Box::pin(async move {
            Ok(IdempotentPost {
                caller: caller.await?,
                payload: body.expect("an unread body is always there to take"),
                request,
                context,
            })
        })
    }
}

impl IdempotentPost {
    pub fn context(&self) -> &ServiceContext {
        &self.context
    }

    /// The POST to endpoint `E` from the wire to the answer, in the
    /// contract's order after authentication: the path (404; a bad id was
    /// refused by its extractor already), content type (415), the body's
    /// size and time (413, 408), the key (400), the body (`parse`: 400),
    /// then the endpoint on the connection the caller was authenticated on;
    /// and its answer, marked when it is a replay.
    pub async fn serve<E: Endpoint<Context = ServiceContext>>(
        self,
        parse: impl FnOnce(&[u8]) -> Result<E::Params, Vec<FieldError>>,
    ) -> Result<HttpResponse, Problem> {
        let IdempotentPost {
            caller,
            request,
            payload,
            context,
        } = self;
        // The key row stores the path as sent, and its column holds so much: a
        // longer path (`/api/rides/000…0001/refunds`) names nothing we serve.
        let path = request.path().to_owned();
        if path.chars().count() > MAX_REQUEST_PATH_CHARS {
            return Err(Problem::new(
                ProblemKind::NotFound,
                "no resource at a path this long",
            ));
        }
        // The authentication that counts is on the work's own connection,
        // where the verdict on the body waits until the caller is known.
        let parsed = parse_request(&request, payload, parse).await;
        let outcome = request_id::block(move || -> Result<Outcome, Problem> {
            let conn = context.pool.get().map_err(ServiceError::from)?;
            let (key, params) = match parsed {
                Ok(parsed) => parsed,
                // Who asked comes before what was wrong with the request.
                Err(problem) => {
                    let mut conn = conn;
                    caller.authenticate(&mut conn)?;
                    return Err(problem);
                }
            };
            Ok(flow::serve::<E>(
                &context,
                conn,
                caller.key_hash(),
                &key,
                &path,
                &params,
            )?)
        })
        .await??;
        if !outcome.replayed {
            crash::point(crash::AFTER_FINISHED);
        }
        Ok(respond(outcome.response, outcome.replayed))
    }
}

async fn parse_request<P>(
    request: &HttpRequest,
    payload: web::Payload,
    parse: impl FnOnce(&[u8]) -> Result<P, Vec<FieldError>>,
) -> Result<(IdempotencyKey, P), Problem> {
    let body = read_json(request, payload, MAX_BODY_BYTES).await?;
    let key = idempotency_key(request)?;
    let params = parse(&body).map_err(Problem::invalid)?;
    Ok((key, params))
}
