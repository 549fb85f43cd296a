//! Raw HTTP over TCP, for what a misbehaving client sends.
use std::time::Duration;

/// Raw HTTP over TCP, for what a misbehaving client sends.
pub fn raw(address: &str, read_timeout: Duration) -> std::net::TcpStream {
    let stream = std::net::TcpStream::connect(address.trim_start_matches("http://")).unwrap();
    stream.set_read_timeout(Some(read_timeout)).unwrap();
    stream
}

/// Sends `head`, then the body one byte every 200 ms until the server hangs
/// up (or 6 s pass); returns what the server answered and how long it took.
pub fn trickle(address: &str, head: String) -> (String, Duration) {
    use std::io::Write;
    use std::time::Instant;
    let mut stream = raw(address, Duration::from_secs(6));
    stream.write_all(head.as_bytes()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let started = Instant::now();
    let sender = std::thread::spawn(move || {
        while started.elapsed() < Duration::from_secs(6) {
            if writer.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let answer = read_all(&mut stream);
    let waited = started.elapsed();
    drop(stream);
    let _ = sender.join();
    (answer, waited)
}

/// Everything the server sends until it hangs up (or the read times out).
pub fn read_all(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// The head of a POST announcing a 100-byte JSON body.
pub fn post_head(path: &str, extra_headers: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\nConnection: close\r\n{extra_headers}\r\n"
    )
}
