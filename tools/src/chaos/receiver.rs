//! The ride app's webhook receiver, as unreliable as real ones: it answers
//! some deliveries with a 500, drops some connections unanswered, and is
//! down now and then (every connection dropped at once), so deliveries are
//! retried, by instances that are themselves killed. It verifies each
//! delivery as it comes (the Standard Webhooks specification's own
//! library, with the secret its registration gave) and keeps every one it
//! took, for the audit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use standardwebhooks::Webhook;

/// Out of every `DOWN_EVERY`, the receiver is down for the first `DOWN_FOR`.
const DOWN_EVERY: Duration = Duration::from_secs(8);
const DOWN_FOR: Duration = Duration::from_millis(1500);
/// Deliveries answered with a 500, and dropped unanswered.
const FAIL_SHARE: f64 = 0.15;
const DROP_SHARE: f64 = 0.05;

/// One delivery taken (answered 204), and whether it verified.
#[derive(Debug, Clone)]
pub struct Taken {
    pub body: Vec<u8>,
    pub verified: Result<(), String>,
}

#[derive(Default)]
struct Shared {
    secret: OnceLock<String>,
    taken: Mutex<Vec<Taken>>,
}

pub struct Receiver {
    pub url: String,
    shared: Arc<Shared>,
}

impl Receiver {
    /// Listens on a free loopback port.
    pub fn start() -> anyhow::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/ride-events", listener.local_addr()?);
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        let born = Instant::now();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let down =
                    born.elapsed().as_millis() % DOWN_EVERY.as_millis() < DOWN_FOR.as_millis();
                if down {
                    continue;
                }
                let shared = serving.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        Ok(Receiver { url, shared })
    }

    /// The secret deliveries are verified with, from the registration.
    pub fn set_secret(&self, secret: String) {
        let _ = self.shared.secret.set(secret);
    }

    pub fn taken(&self) -> Vec<Taken> {
        self.shared.taken.lock().unwrap().clone()
    }
}

/// A delivery as the specification's library verifies it.
fn verify(secret: Option<&String>, headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
    let secret = secret.ok_or("a delivery before the destination was registered")?;
    Webhook::new(secret)
        .and_then(|webhook| webhook.verify(body, headers))
        .map_err(|err| err.to_string())
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        // Closed before a request came.
        return Ok(());
    }
    let mut headers = HeaderMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let parsed = header.split_once(':').and_then(|(name, value)| {
            Some((
                HeaderName::from_bytes(name.trim().as_bytes()).ok()?,
                HeaderValue::from_str(value.trim()).ok()?,
            ))
        });
        if let Some((name, value)) = parsed {
            headers.append(name, value);
        }
    }
    let length = headers
        .get("content-length")
        .and_then(|value| value.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let roll: f64 = rand::thread_rng().gen();
    let status = if roll < DROP_SHARE {
        return Ok(());
    } else if roll < DROP_SHARE + FAIL_SHARE {
        "500 Failing"
    } else {
        let verified = verify(shared.secret.get(), &headers, &body);
        shared.taken.lock().unwrap().push(Taken { body, verified });
        "204 Taken"
    };
    (&stream).write_all(
        format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").as_bytes(),
    )
}
