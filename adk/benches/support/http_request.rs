//! What the benches' local HTTP servers share: reading one request off a socket.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads one HTTP request: its headers, then as many body bytes as `content-length` says.
/// `false` when the client closed or the read failed before the request was whole.
pub async fn read_request(socket: &mut TcpStream) -> bool {
    let mut request = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let Ok(read) = socket.read(&mut buffer).await else {
            return false;
        };
        if read == 0 {
            return false;
        }
        request.extend_from_slice(&buffer[..read]);
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                return true;
            }
        }
    }
}
