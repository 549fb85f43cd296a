//! Just enough HTTP/1.1 for the fake gateway: one request per connection
//! (every answer says `Connection: close`), a `Content-Length` body, and the
//! freedom to hang up without answering, which an HTTP framework would not give.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// Stripe's requests are small; anything larger is not one of them.
const MAX_HEAD: usize = 16 * 1024;
const MAX_BODY: usize = 256 * 1024;

pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What a page was sent: the fields of a `GET`'s query, or of a `POST`'s
/// form with the answer (its `outcome`) taken out of them.
pub struct PageRequest {
    pub fields: HashMap<String, String>,
    pub outcome: Option<String>,
}

impl Request {
    /// `None` for a method other than `GET` and `POST`.
    pub fn page_request(&self) -> Option<PageRequest> {
        let parse = |text: &[u8]| -> HashMap<String, String> {
            serde_urlencoded::from_bytes(text).unwrap_or_default()
        };
        match self.method.as_str() {
            "GET" => Some(PageRequest {
                fields: parse(self.query.as_bytes()),
                outcome: None,
            }),
            "POST" => {
                let mut fields = parse(&self.body);
                let outcome = Some(fields.remove("outcome").unwrap_or_default());
                Some(PageRequest { fields, outcome })
            }
            _ => None,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, body: &impl serde::Serialize) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: serde_json::to_vec(body).expect("wire types serialize"),
        }
    }

    /// A page for a browser, with the headers every page has.
    pub fn html(status: u16, page: String) -> Response {
        Self::html_posting_to(status, page, None)
    }

    /// A page whose form's answer redirects to `form_target` (an origin).
    pub fn html_posting_to(status: u16, page: String, form_target: Option<&str>) -> Response {
        let mut headers = vec![("Content-Type", "text/html; charset=utf-8".to_owned())];
        headers.extend(ridepay_gateway::html::security_headers(form_target));
        Response {
            status,
            headers,
            body: page.into_bytes(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

/// Reads from a stream until a deadline, however slowly the bytes come:
/// each read waits only for what is left of the time, so a byte a second
/// does not keep restarting the clock.
struct UntilDeadline<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
}

impl Read for UntilDeadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the request did not arrive in time",
            ));
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}

/// Reads one request, all of it by `deadline`; `None` when the client
/// closed without sending one.
pub fn read_request(stream: &TcpStream, deadline: Instant) -> io::Result<Option<Request>> {
    let mut reader = BufReader::new(UntilDeadline { stream, deadline });
    let mut head = Vec::new();
    {
        let mut limited = reader.by_ref().take(MAX_HEAD as u64);
        // The head ends with an empty line.
        while !(head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n")) {
            if limited.read_until(b'\n', &mut head)? == 0 {
                return match head.len() {
                    0 => Ok(None),
                    MAX_HEAD => Err(invalid("request head too large")),
                    _ => Err(invalid("connection closed mid-request")),
                };
            }
        }
    }
    let mut parsed_headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut parsed_headers);
    if !parsed
        .parse(&head)
        .map_err(|err| invalid(&err.to_string()))?
        .is_complete()
    {
        return Err(invalid("incomplete request head"));
    }
    let target = parsed.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut request = Request {
        method: parsed.method.unwrap_or("GET").to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        headers: parsed
            .headers
            .iter()
            .map(|header| {
                (
                    header.name.to_owned(),
                    String::from_utf8_lossy(header.value).into_owned(),
                )
            })
            .collect(),
        body: Vec::new(),
    };
    let length: usize = match request.header("content-length") {
        Some(value) => value
            .trim()
            .parse()
            .map_err(|_| invalid("bad Content-Length"))?,
        None => 0,
    };
    if length > MAX_BODY {
        return Err(invalid("request body too large"));
    }
    request.body.resize(length, 0);
    reader.read_exact(&mut request.body)?;
    Ok(Some(request))
}

pub fn write_response(mut stream: &TcpStream, response: &Response) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\nStripe-Version: {}\r\n\
         Request-Id: req_{}\r\n",
        response.status,
        reason(response.status),
        response.body.len(),
        ridepay_gateway::STRIPE_VERSION,
        hex::encode(rand::random::<[u8; 7]>()),
    );
    // JSON, unless the answer says otherwise (a page).
    if !response
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&response.body)?;
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}
