//! The demo agent built into the binary (`upstream: builtin:demo`).
//!
//! It runs in-process on a loopback port of its own, on its own thread and runtime, and
//! speaks A2A JSON-RPC v1.0 and v0.3 at `/` and v1.0 REST at `/rest`, streaming included.
//! It answers each message with a summary of the parts it received, so a newcomer can see
//! exactly what reached the agent. Its card advertises the input-constraints extension, so
//! the gateway has limits to enforce out of the box.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::protocols::http::ServerSession;
use pingora::protocols::l4::stream::Stream;
use serde_json::{json, Value};

/// Largest request body the demo reads.
const MAX_BODY: usize = 256 << 20;
/// Pause between streamed events, so streaming is visible with curl.
const STREAM_STEP: Duration = Duration::from_millis(150);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Start the demo agent on a loopback port; returns its address.
pub fn start() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a loopback port for the demo agent");
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let addr = listener.local_addr().expect("bound address");
    std::thread::Builder::new()
        .name("demo-agent".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("demo agent runtime");
            runtime.block_on(serve(listener, addr));
        })
        .expect("spawn the demo agent thread");
    tracing::info!(%addr, "demo agent listening");
    addr
}

async fn serve(listener: std::net::TcpListener, addr: SocketAddr) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let mut stream: pingora::protocols::Stream = Box::new(Stream::from(tcp));
            loop {
                let mut session = ServerSession::new_http1(stream);
                match session.read_request().await {
                    Ok(true) => {}
                    _ => return,
                }
                if handle(&mut session, addr).await.is_err() {
                    return;
                }
                match session.finish().await {
                    Ok(Some(reusable)) => {
                        let (s, prefix) = reusable.into_parts();
                        if prefix.is_some() {
                            return; // pipelining: not worth supporting in a demo
                        }
                        stream = s;
                    }
                    _ => return,
                }
            }
        });
    }
}

async fn handle(session: &mut ServerSession, addr: SocketAddr) -> pingora::Result<()> {
    let method = session.req_header().method.as_str().to_string();
    let path = session.req_header().uri.path().to_string();
    let mut body = Vec::new();
    while let Some(chunk) = session.read_request_body().await? {
        if body.len() + chunk.len() > MAX_BODY {
            return respond(
                session,
                413,
                "application/json",
                json!({"error": "body too large"}),
            )
            .await;
        }
        body.extend_from_slice(&chunk);
    }
    match (method.as_str(), path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => {
            respond(session, 200, "application/json", card(addr)).await
        }
        ("POST", "/") => json_rpc(session, &body).await,
        ("POST", "/rest/message:send") => match rest_message(&body) {
            Ok(msg) => {
                respond(
                    session,
                    200,
                    "application/a2a+json",
                    json!({ "message": reply_v1(&msg) }),
                )
                .await
            }
            Err(status) => respond(session, 400, "application/a2a+json", status).await,
        },
        ("POST", "/rest/message:stream") => match rest_message(&body) {
            Ok(msg) => stream(session, events_v1(&msg), |e| e).await,
            Err(status) => respond(session, 400, "application/a2a+json", status).await,
        },
        _ => {
            respond(
                session,
                404,
                "application/json",
                json!({"error": format!("no route for {method} {path}")}),
            )
            .await
        }
    }
}

async fn json_rpc(session: &mut ServerSession, body: &[u8]) -> pingora::Result<()> {
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return respond(
                session,
                200,
                "application/json",
                rpc_error(Value::Null, -32700, &format!("invalid JSON: {e}")),
            )
            .await
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let message = request
        .pointer("/params/message")
        .cloned()
        .unwrap_or(Value::Null);
    match method {
        "SendMessage" => {
            respond(
                session,
                200,
                "application/json",
                rpc_result(id, json!({ "message": reply_v1(&message) })),
            )
            .await
        }
        "message/send" => {
            respond(
                session,
                200,
                "application/json",
                rpc_result(id, reply_v03(&message)),
            )
            .await
        }
        "SendStreamingMessage" => {
            stream(session, events_v1(&message), |e| rpc_result(id.clone(), e)).await
        }
        "message/stream" => {
            stream(session, events_v03(&message), |e| rpc_result(id.clone(), e)).await
        }
        "GetTask" | "CancelTask" | "SubscribeToTask" | "tasks/get" | "tasks/cancel"
        | "tasks/resubscribe" => {
            respond(
                session,
                200,
                "application/json",
                rpc_error(id, -32001, "task not found: the demo agent keeps no tasks"),
            )
            .await
        }
        "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard" => {
            respond(
                session,
                200,
                "application/json",
                rpc_error(id, -32004, "the demo agent has no extended card"),
            )
            .await
        }
        _ => {
            respond(
                session,
                200,
                "application/json",
                rpc_error(id, -32601, &format!("method not found: {method:?}")),
            )
            .await
        }
    }
}

fn rest_message(body: &[u8]) -> Result<Value, Value> {
    let request: Value = serde_json::from_slice(body).map_err(|e| {
        json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": format!("invalid JSON: {e}")}})
    })?;
    Ok(request.get("message").cloned().unwrap_or(Value::Null))
}

fn rpc_result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn rpc_error(id: Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// "received 2 parts: text (5 chars); file photo.png (image/png, 1234 bytes)".
fn summarize(message: &Value) -> String {
    let parts = message
        .get("parts")
        .or_else(|| message.get("content"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let described: Vec<String> = parts.iter().map(describe_part).collect();
    format!(
        "cardgate demo agent received {} part(s): {}",
        parts.len(),
        if described.is_empty() {
            "nothing".to_string()
        } else {
            described.join("; ")
        }
    )
}

fn describe_part(part: &Value) -> String {
    let file = part.get("file");
    let text = part.get("text").and_then(Value::as_str);
    let inline = part
        .get("raw")
        .or_else(|| file.and_then(|f| f.get("bytes").or_else(|| f.get("fileWithBytes"))))
        .and_then(Value::as_str);
    let link = part
        .get("url")
        .or_else(|| file.and_then(|f| f.get("uri").or_else(|| f.get("fileWithUri"))))
        .and_then(Value::as_str);
    let media = part
        .get("mediaType")
        .or_else(|| file.and_then(|f| f.get("mimeType")))
        .and_then(Value::as_str)
        .unwrap_or("no media type");
    let name = part
        .get("filename")
        .or_else(|| file.and_then(|f| f.get("name")))
        .and_then(Value::as_str)
        .unwrap_or("unnamed");
    if let Some(text) = text {
        format!(
            "text {:?} ({} chars)",
            text.chars().take(40).collect::<String>(),
            text.chars().count()
        )
    } else if let Some(b64) = inline {
        let size = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map(|d| d.len().to_string())
            .unwrap_or_else(|_| "invalid base64".into());
        format!("file {name} ({media}, {size} bytes)")
    } else if let Some(link) = link {
        format!("file {name} ({media}) at {link}")
    } else {
        "data".to_string()
    }
}

fn context_id(message: &Value) -> String {
    message
        .get("contextId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("demo-context-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed)))
}

fn reply_v1(message: &Value) -> Value {
    json!({
        "messageId": format!("demo-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
        "contextId": context_id(message),
        "role": "ROLE_AGENT",
        "parts": [{"text": summarize(message)}]
    })
}

fn reply_v03(message: &Value) -> Value {
    json!({
        "kind": "message",
        "messageId": format!("demo-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
        "contextId": context_id(message),
        "role": "agent",
        "parts": [{"kind": "text", "text": summarize(message)}]
    })
}

/// A task's life as v1.0 stream events: submitted, working, the answer, completed.
fn events_v1(message: &Value) -> Vec<Value> {
    let task = format!("demo-task-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let ctx = context_id(message);
    let status = |state: &str| json!({"statusUpdate": {"taskId": task, "contextId": ctx, "status": {"state": state}}});
    vec![
        json!({"task": {"id": task, "contextId": ctx, "status": {"state": "TASK_STATE_SUBMITTED"}}}),
        status("TASK_STATE_WORKING"),
        json!({"artifactUpdate": {"taskId": task, "contextId": ctx, "artifact": {"artifactId": "summary", "parts": [{"text": summarize(message)}]}}}),
        status("TASK_STATE_COMPLETED"),
    ]
}

fn events_v03(message: &Value) -> Vec<Value> {
    let task = format!("demo-task-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let ctx = context_id(message);
    let status = |state: &str, last: bool| json!({"kind": "status-update", "taskId": task, "contextId": ctx, "status": {"state": state}, "final": last});
    vec![
        json!({"kind": "task", "id": task, "contextId": ctx, "status": {"state": "submitted"}}),
        status("working", false),
        json!({"kind": "artifact-update", "taskId": task, "contextId": ctx, "artifact": {"artifactId": "summary", "parts": [{"kind": "text", "text": summarize(message)}]}}),
        status("completed", true),
    ]
}

async fn respond(
    session: &mut ServerSession,
    status: u16,
    content_type: &str,
    body: Value,
) -> pingora::Result<()> {
    let body = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    let mut header = ResponseHeader::build(status, Some(2))?;
    header.insert_header("content-type", content_type)?;
    header.insert_header("content-length", body.len().to_string())?;
    session.write_response_header(Box::new(header)).await?;
    session.write_response_body(body, true).await?;
    Ok(())
}

/// Send `events` as server-sent events, one every `STREAM_STEP`.
async fn stream(
    session: &mut ServerSession,
    events: Vec<Value>,
    wrap: impl Fn(Value) -> Value,
) -> pingora::Result<()> {
    let mut header = ResponseHeader::build(200, Some(2))?;
    header.insert_header("content-type", "text/event-stream")?;
    header.insert_header("cache-control", "no-cache")?;
    header.insert_header("transfer-encoding", "chunked")?;
    session.write_response_header(Box::new(header)).await?;
    for (i, event) in events.into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STREAM_STEP).await;
        }
        let line = format!("data: {}\n\n", wrap(event));
        session
            .write_response_body(Bytes::from(line), false)
            .await?;
    }
    session.write_response_body(Bytes::new(), true).await?;
    Ok(())
}

/// The demo card: hybrid v1.0 + v0.3 (as a2a-sdk 1.x serves), with example limits.
pub fn card(addr: SocketAddr) -> Value {
    let base = format!("http://{addr}");
    json!({
        "name": "cardgate demo agent",
        "description": "Answers every message with a summary of the parts it received. Built into cardgate for trying it out.",
        "version": env!("CARGO_PKG_VERSION"),
        "protocolVersion": "0.3",
        "url": format!("{base}/"),
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": format!("{base}/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {
            "streaming": true,
            "pushNotifications": false,
            "extensions": [{
                "uri": crate::card::INPUT_CONSTRAINTS_URI,
                "description": "Input size and format limits",
                "required": false,
                "params": {
                    "files": {
                        "maxCountPerRequest": 4,
                        "maxSizePerFileBytes": 5_242_880,
                        "maxTotalSizeBytes": 10_485_760,
                        "perMimeType": {
                            "image/png": {"maxSizeBytes": 2_097_152, "maxDimensions": {"width": 2048, "height": 2048}},
                            "image/jpeg": {"maxSizeBytes": 4_194_304, "maxDimensions": {"width": 4096, "height": 4096}}
                        }
                    },
                    "text": {"maxCharacters": 20000}
                }
            }]
        },
        "defaultInputModes": ["text/plain", "image/png", "image/jpeg", "application/pdf"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "summarize-parts",
            "name": "Summarize parts",
            "description": "Tells you what arrived: each part's kind, name, media type and size.",
            "tags": ["demo", "echo"],
            "examples": ["hello"]
        }]
    })
}
