//! A fast A2A upstream for the end-to-end benchmark (`benches/e2e.sh`).
//!
//! It serves a card (JSON-RPC v1.0 at `/`, input-constraints limits large enough for the
//! benchmark's uploads) and answers every POST with a fixed SendMessage result, but only
//! after reading the whole body, so upload numbers measure bytes that really arrived.
//!
//! Usage: cargo run --release --example bench_agent -- PORT

use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::protocols::http::ServerSession;
use pingora::protocols::l4::stream::Stream;
use serde_json::json;

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("usage: bench_agent PORT");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        let card = Bytes::from(card(port));
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let card = card.clone();
            tokio::spawn(async move {
                let mut stream: pingora::protocols::Stream = Box::new(Stream::from(tcp));
                loop {
                    let mut session = ServerSession::new_http1(stream);
                    if !matches!(session.read_request().await, Ok(true)) {
                        return;
                    }
                    let mut read = 0usize;
                    while let Ok(Some(chunk)) = session.read_request_body().await {
                        read += chunk.len();
                    }
                    let body = if session.req_header().method == http::Method::GET {
                        card.clone()
                    } else {
                        Bytes::from(format!(
                            r#"{{"jsonrpc":"2.0","id":1,"result":{{"message":{{"messageId":"r","role":"ROLE_AGENT","parts":[{{"text":"read {read} bytes"}}]}}}}}}"#
                        ))
                    };
                    let mut header = ResponseHeader::build(200, Some(2)).unwrap();
                    header.insert_header("content-type", "application/json").unwrap();
                    header.insert_header("content-length", body.len().to_string()).unwrap();
                    if session.write_response_header(Box::new(header)).await.is_err()
                        || session.write_response_body(body, true).await.is_err()
                    {
                        return;
                    }
                    match session.finish().await {
                        Ok(Some(reusable)) => stream = reusable.into_parts().0,
                        _ => return,
                    }
                }
            });
        }
    });
}

fn card(port: u16) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "name": "bench agent", "description": "answers fast", "version": "1",
        "supportedInterfaces": [{"url": format!("http://127.0.0.1:{port}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "extensions": [{
            "uri": "https://inkeep.com/a2a-extensions/input-constraints/v1",
            "params": {"files": {"maxSizePerFileBytes": 67108864, "maxTotalSizeBytes": 67108864, "maxCountPerRequest": 8},
                       "text": {"maxCharacters": 100000}}}]},
        "defaultInputModes": ["text/plain", "application/octet-stream", "image/png"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["bench"]}]
    }))
    .unwrap()
}
