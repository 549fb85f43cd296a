//! A webhook receiver on loopback, as a ride app runs one: it records every
//! request (headers and body, byte for byte) and answers each as told,
//! 200 by default; told to hang, it reads the request and never answers.
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// How the receiver answers a request.
#[derive(Debug, Clone)]
pub enum Reply {
    Status(u16, Vec<(&'static str, String)>),
    Hang,
}

/// One request as the receiver got it.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers[name].to_str().unwrap()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Default)]
struct State {
    received: Vec<Received>,
    replies: VecDeque<Reply>,
}

pub struct Receiver {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl Receiver {
    /// Listens on a free loopback port; requests go to `/hook`.
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Receiver { url, state }
    }

    /// The next requests are answered so, in turn.
    pub fn reply(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().replies.extend(replies);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut headers = HeaderMap::new();
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
            HeaderValue::from_str(value.trim()).unwrap(),
        );
    }
    let length: usize = headers
        .get("content-length")
        .map_or(0, |value| value.to_str().unwrap().parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let reply = {
        let mut state = state.lock().unwrap();
        state.received.push(Received { headers, body });
        state
            .replies
            .pop_front()
            .unwrap_or(Reply::Status(200, Vec::new()))
    };
    match reply {
        Reply::Hang => {
            // Holds the connection open, answering nothing, until the
            // sender gives up.
            let _ = reader.read_to_end(&mut Vec::new());
        }
        Reply::Status(status, extra) => {
            let mut head =
                format!("HTTP/1.1 {status} Answer\r\ncontent-length: 0\r\nconnection: close\r\n");
            for (name, value) in extra {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = (&stream).write_all(head.as_bytes());
        }
    }
}
