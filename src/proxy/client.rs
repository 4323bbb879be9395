//! HTTP/1.1 to agents: a small client over pingora's transport connector.
//!
//! pingora's `HttpSession` client flushes the request header and the body as two writes
//! (two segments, two wake-ups of the agent), and its pool spawns a task per released
//! connection to watch it while idle. Most A2A requests are a few hundred bytes, so those
//! costs are most of what forwarding one costs. Here:
//! - the request head and a body of up to 64 KiB leave in one write;
//! - idle connections wait in a plain LIFO list per agent address. A connection taken out is
//!   first checked, without a syscall when nothing happened to it, for a close or stray bytes;
//!   a request that fails on a reused connection before any response byte arrived can be
//!   retried by the caller (the body is in memory);
//! - the response head is parsed with httparse and handed on without copying names or values.
//!
//! Connecting (TCP options, timeouts, TLS with rustls) stays pingora's `TransportConnector`.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::IoSlice;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use http::HeaderValue;
use pingora::connectors::TransportConnector;
use pingora::http::ResponseHeader;
use pingora::protocols::Stream;
use pingora_timeout::fast_timeout::fast_timeout;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

use crate::card::rewrite::Origin;
use crate::config::Timeouts;
use crate::upstream::{self, UpstreamError, UpstreamErrorKind};

/// Largest response head accepted from an agent.
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 128;
/// Longest chunk-size line (with extensions) and most trailer bytes accepted.
const MAX_CHUNK_LINE: usize = 4 * 1024;
const MAX_TRAILERS: usize = 64 * 1024;
/// Bodies up to this size are copied behind the head and sent in the same write.
const COALESCE_BODY: usize = 64 * 1024;
const READ_RESERVE: usize = 16 * 1024;
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_IDLE_PER_AGENT: usize = 256;

/// Where a request goes.
pub struct Target<'a> {
    pub addr: SocketAddr,
    pub origin: &'a Origin,
    pub timeouts: &'a Timeouts,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct PoolKey {
    addr: SocketAddr,
    /// 0 for plain HTTP; a hash of the TLS server name otherwise.
    sni: u64,
}

impl PoolKey {
    fn of(t: &Target<'_>) -> Self {
        let sni = if t.origin.tls {
            let mut h = DefaultHasher::new();
            t.origin.host.hash(&mut h);
            h.finish() | 1
        } else {
            0
        };
        PoolKey { addr: t.addr, sni }
    }
}

struct Idle {
    stream: Stream,
    buf: BytesMut,
    since: Instant,
}

/// Connections to agents, kept alive between requests.
pub struct AgentPool {
    transport: TransportConnector,
    idle: Mutex<HashMap<PoolKey, VecDeque<Idle>>>,
}

impl Default for AgentPool {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentPool {
    pub fn new() -> Self {
        AgentPool {
            transport: TransportConnector::new(None),
            idle: Mutex::new(HashMap::new()),
        }
    }

    /// A pooled connection that still looks open, or a new one.
    pub async fn connect(&self, target: &Target<'_>) -> Result<AgentConn, UpstreamError> {
        let key = PoolKey::of(target);
        while let Some(mut idle) = self.take_idle(&key) {
            if still_open(&mut idle.stream) {
                return Ok(AgentConn::new(idle.stream, idle.buf, key, true, target));
            }
        }
        let peer = upstream::peer(target.addr, target.origin, target.timeouts);
        let stream = self
            .transport
            .new_stream(&peer)
            .await
            .map_err(|e| UpstreamError::from_pingora(&e))?;
        Ok(AgentConn::new(stream, BytesMut::new(), key, false, target))
    }

    fn take_idle(&self, key: &PoolKey) -> Option<Idle> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(key)?;
        let newest = list.pop_back()?;
        if newest.since.elapsed() < IDLE_TIMEOUT {
            return Some(newest);
        }
        // The newest is too old, so all are: close them outside the lock.
        let stale = std::mem::take(list);
        drop(idle);
        drop(stale);
        None
    }

    /// Keep a connection whose exchange ended cleanly; others are closed.
    pub fn release(&self, conn: AgentConn) {
        if !conn.reusable() {
            return;
        }
        let now = Instant::now();
        let entry = Idle {
            stream: conn.stream,
            buf: conn.buf,
            since: now,
        };
        let mut evicted = Vec::new();
        {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let list = idle.entry(conn.key).or_default();
            while list
                .front()
                .is_some_and(|i| now.duration_since(i.since) >= IDLE_TIMEOUT)
                || list.len() >= MAX_IDLE_PER_AGENT
            {
                evicted.extend(list.pop_front());
            }
            list.push_back(entry);
        }
        drop(evicted);
    }
}

/// Whether an idle connection can carry a request: nothing arrived on it (no close, no stray
/// bytes). Polls once with a no-op waker; the reactor's readiness makes this syscall-free for
/// a connection nothing happened to.
fn still_open(stream: &mut Stream) -> bool {
    let mut byte = [0u8; 1];
    let mut buf = ReadBuf::new(&mut byte);
    let mut cx = Context::from_waker(Waker::noop());
    matches!(Pin::new(stream).poll_read(&mut cx, &mut buf), Poll::Pending)
}

/// How the response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No response head read yet.
    Head,
    Length(u64),
    Chunked(Chunk),
    /// Until the agent closes the connection.
    Close,
    Done,
}

/// What one step of the chunked decoder did.
enum Step {
    Data(Bytes),
    Progress,
    NeedMore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers(usize),
}

/// How the request body is framed on the wire to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFraming {
    None,
    Length(u64),
    Chunked,
}

/// A failure, and whether the request may be retried on another connection.
pub struct SendError {
    pub error: UpstreamError,
    pub retryable: bool,
}

/// One connection to an agent, carrying one exchange at a time.
pub struct AgentConn {
    stream: Stream,
    buf: BytesMut,
    key: PoolKey,
    reused: bool,
    read_timeout: Duration,
    framing: Framing,
    keep_alive: bool,
    request_done: bool,
    /// Bytes of the response seen (so a failure before any is retryable).
    response_started: bool,
    closed_by_agent: bool,
}

impl AgentConn {
    fn new(stream: Stream, buf: BytesMut, key: PoolKey, reused: bool, t: &Target<'_>) -> Self {
        AgentConn {
            stream,
            buf,
            key,
            reused,
            read_timeout: t.timeouts.read,
            framing: Framing::Head,
            keep_alive: true,
            request_done: false,
            response_started: false,
            closed_by_agent: false,
        }
    }

    /// The timeout for each read (and write) from now on.
    pub fn set_read_timeout(&mut self, d: Duration) {
        self.read_timeout = d;
    }

    /// The agent ended the connection in the middle of a body.
    pub fn closed_by_agent(&self) -> bool {
        self.closed_by_agent
    }

    /// The exchange ended cleanly and the connection can carry another one.
    fn reusable(&self) -> bool {
        self.request_done && self.framing == Framing::Done && self.keep_alive && self.buf.is_empty()
    }

    /// Write the request head and a whole body (length-framed), then flush.
    pub async fn send_whole(&mut self, head: &[u8], body: &[Bytes]) -> Result<(), SendError> {
        let size: usize = body.iter().map(Bytes::len).sum();
        if size <= COALESCE_BODY {
            let mut whole = Vec::with_capacity(head.len() + size);
            whole.extend_from_slice(head);
            for chunk in body {
                whole.extend_from_slice(chunk);
            }
            self.write(&whole).await?;
        } else {
            let pieces: Vec<&[u8]> = std::iter::once(head)
                .chain(body.iter().map(|b| &b[..]))
                .collect();
            self.write_gathered(&pieces).await?;
        }
        self.flush().await?;
        self.request_done = true;
        Ok(())
    }

    /// Write `pieces` in order with gathered writes of up to `GATHER` at a time, so a 20 MB
    /// upload read in 64 KiB chunks costs a few dozen syscalls rather than hundreds, and a
    /// streamed chunk goes with its framing without being copied.
    async fn write_gathered(&mut self, pieces: &[&[u8]]) -> Result<(), SendError> {
        const GATHER: usize = 64;
        let pieces: Vec<&[u8]> = pieces.iter().copied().filter(|p| !p.is_empty()).collect();
        let (mut first, mut offset) = (0, 0);
        let mut slices = Vec::with_capacity(GATHER.min(pieces.len()));
        while first < pieces.len() {
            slices.clear();
            slices.push(IoSlice::new(&pieces[first][offset..]));
            slices.extend(
                pieces[first + 1..]
                    .iter()
                    .take(GATHER - 1)
                    .map(|p| IoSlice::new(p)),
            );
            let result = fast_timeout(self.read_timeout, self.stream.write_vectored(&slices)).await;
            let mut written = self.io_result(result, "writing the request to the agent")?;
            if written == 0 {
                let e = std::io::ErrorKind::WriteZero.into();
                return Err(self.lost("writing the request to the agent", e));
            }
            while written > 0 {
                let left = pieces[first].len() - offset;
                if written >= left {
                    written -= left;
                    first += 1;
                    offset = 0;
                } else {
                    offset += written;
                    written = 0;
                }
            }
        }
        Ok(())
    }

    /// Write the request head now; the body follows with [`write_body`](Self::write_body).
    pub async fn send_head(&mut self, head: &[u8]) -> Result<(), SendError> {
        self.write(head).await?;
        self.flush().await
    }

    /// One piece of a streamed body, framed as announced in the head.
    pub async fn write_body(
        &mut self,
        chunk: &[u8],
        framing: RequestFraming,
    ) -> Result<(), SendError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if framing == RequestFraming::Chunked {
            let size_line = format!("{:x}\r\n", chunk.len());
            self.write_gathered(&[size_line.as_bytes(), chunk, b"\r\n"])
                .await?;
        } else {
            self.write(chunk).await?;
        }
        self.flush().await
    }

    /// The end of a streamed body.
    pub async fn finish_body(&mut self, framing: RequestFraming) -> Result<(), SendError> {
        if framing == RequestFraming::Chunked {
            self.write(b"0\r\n\r\n").await?;
            self.flush().await?;
        }
        self.request_done = true;
        Ok(())
    }

    async fn write(&mut self, data: &[u8]) -> Result<(), SendError> {
        let result = fast_timeout(self.read_timeout, self.stream.write_all(data)).await;
        self.io_result(result, "writing the request to the agent")
    }

    async fn flush(&mut self) -> Result<(), SendError> {
        let result = fast_timeout(self.read_timeout, self.stream.flush()).await;
        self.io_result(result, "writing the request to the agent")
    }

    fn io_result<T, E>(
        &self,
        result: Result<std::io::Result<T>, E>,
        doing: &str,
    ) -> Result<T, SendError> {
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.lost(doing, e)),
            Err(_) => Err(SendError {
                error: UpstreamError::timeout(doing, self.read_timeout),
                retryable: false,
            }),
        }
    }

    fn lost(&self, doing: &str, e: std::io::Error) -> SendError {
        SendError {
            error: UpstreamError::new(
                UpstreamErrorKind::Reset,
                format!("connection lost ({doing}: {e})"),
            ),
            retryable: self.reused && !self.response_started,
        }
    }

    /// Read more bytes into the buffer; `Ok(0)` at the agent's close.
    async fn fill(&mut self, doing: &str) -> Result<usize, SendError> {
        if self.buf.capacity() - self.buf.len() < 1024 {
            self.buf.reserve(READ_RESERVE);
        }
        let result = fast_timeout(self.read_timeout, self.stream.read_buf(&mut self.buf)).await;
        let n = self.io_result(result, doing)?;
        if n > 0 {
            self.response_started = true;
        }
        Ok(n)
    }

    /// After a write to the agent failed: an agent may answer before it has read the whole
    /// request (a 413, a 401) and close, and then its answer, not the lost connection, is
    /// what the client must get. Only a lost connection is looked at (its answer, if any, is
    /// already in the socket); a write that timed out is not waited on again. The connection
    /// is not reused afterwards: the request never went whole.
    pub async fn answer_after_failed_write(
        &mut self,
        failed: SendError,
        head_request: bool,
    ) -> Result<ResponseHeader, SendError> {
        if failed.error.kind != UpstreamErrorKind::Reset {
            return Err(failed);
        }
        self.keep_alive = false;
        match self.read_head(head_request).await {
            Ok(head) => Ok(head),
            Err(_) => Err(failed),
        }
    }

    /// Read the response head (1xx answers skipped). `head_request`: the response has no body.
    pub async fn read_head(&mut self, head_request: bool) -> Result<ResponseHeader, SendError> {
        loop {
            let Some(len) = head_end(&self.buf) else {
                if self.buf.len() >= MAX_HEAD_BYTES {
                    return Err(self.protocol(format!(
                        "the agent's response head is larger than {} KiB",
                        MAX_HEAD_BYTES / 1024
                    )));
                }
                if self.fill("reading the agent's response head").await? == 0 {
                    return Err(SendError {
                        error: UpstreamError::new(
                            UpstreamErrorKind::Reset,
                            "connection lost (the agent closed the connection before answering)",
                        ),
                        retryable: self.reused && !self.response_started,
                    });
                }
                continue;
            };
            let head = self.buf.split_to(len).freeze();
            if let Some(header) = self.build_header(&head, head_request)? {
                return Ok(header);
            }
            // A 1xx answer: the final one follows.
        }
    }

    fn protocol(&self, message: String) -> SendError {
        SendError {
            error: UpstreamError::new(UpstreamErrorKind::Protocol, message),
            retryable: false,
        }
    }

    /// Parse a whole head (once) into a `ResponseHeader` whose names and values share `head`,
    /// and decide the body's framing. `None` for an informational (1xx) answer.
    fn build_header(
        &mut self,
        head: &Bytes,
        head_request: bool,
    ) -> Result<Option<ResponseHeader>, SendError> {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut slots);
        match response.parse(head) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => {
                return Err(self.protocol("invalid response head from the agent".into()))
            }
            Err(e) => {
                return Err(self.protocol(format!("invalid response head from the agent ({e})")))
            }
        }
        let status = response.code.unwrap_or(0);
        if (100..200).contains(&status) {
            if status == 101 {
                return Err(self.protocol("the agent switched protocols unasked".into()));
            }
            return Ok(None);
        }
        let version = response.version.unwrap_or(0);
        let mut header = ResponseHeader::build(status, Some(response.headers.len()))
            .map_err(|_| self.protocol(format!("invalid status {status} from the agent")))?;
        if let Some(reason) = response.reason {
            let canonical = header.status.canonical_reason().unwrap_or("");
            if reason != canonical && !reason.is_empty() {
                // An odd reason phrase is cosmetic: keep it when it is valid, else drop it.
                let _ = header.set_reason_phrase(Some(reason));
            }
        }
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut other_coding = false;
        let mut close = version == 0;
        // Other header names the agent's `Connection` lists: they describe its hop only.
        let mut listed: Vec<&[u8]> = Vec::new();
        for h in response.headers.iter() {
            let name = head.slice_ref(h.name.as_bytes());
            let value = head.slice_ref(h.value);
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = std::str::from_utf8(h.value)
                    .ok()
                    .map(str::trim)
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<u64>().ok());
                match (n, length) {
                    (Some(n), None) => length = Some(n),
                    (Some(n), Some(prev)) if n == prev => {}
                    _ => {
                        return Err(self.protocol(format!(
                            "invalid Content-Length in the agent's response: {:?}",
                            String::from_utf8_lossy(h.value)
                        )))
                    }
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                let last = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .map(<[u8]>::trim_ascii)
                    .unwrap_or(b"");
                chunked = last.eq_ignore_ascii_case(b"chunked");
                other_coding |= !chunked;
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                    if token.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        if version == 0 {
                            close = false;
                        }
                    } else if !token.is_empty() {
                        listed.push(token);
                    }
                }
            }
            // The client goes on with the framing decided here; the fields that describe only
            // the agent's hop are not part of the answer passed on.
            if is_hop_by_hop(h.name) {
                continue;
            }
            let value = HeaderValue::from_maybe_shared(value).map_err(|_| {
                self.protocol(format!("invalid value of header {} from the agent", h.name))
            })?;
            header.append_header(name, value).map_err(|_| {
                self.protocol(format!("invalid header name {:?} from the agent", h.name))
            })?;
        }
        for name in listed {
            if let Ok(name) = std::str::from_utf8(name) {
                header.remove_header(name);
            }
        }
        self.keep_alive = !close;
        self.framing = if head_request || status == 204 || status == 304 {
            Framing::Done
        } else if chunked && !other_coding {
            Framing::Chunked(Chunk::Size)
        } else if other_coding {
            // A coding other than a final `chunked` is delimited by the close (RFC 9112 6.3).
            Framing::Close
        } else if let Some(n) = length {
            if n == 0 {
                Framing::Done
            } else {
                Framing::Length(n)
            }
        } else {
            Framing::Close
        };
        if self.framing == Framing::Close {
            self.keep_alive = false;
        }
        Ok(Some(header))
    }

    /// The next piece of the response body, as soon as any arrives; `None` at its end.
    pub async fn read_body(&mut self) -> Result<Option<Bytes>, SendError> {
        loop {
            match self.framing {
                Framing::Head => return Err(self.protocol("no response head yet".into())),
                Framing::Done => return Ok(None),
                Framing::Length(left) => {
                    if self.buf.is_empty() && self.fill_body().await? == 0 {
                        return Err(self.cut_off());
                    }
                    let take = (self.buf.len() as u64).min(left);
                    self.framing = match left - take {
                        0 => Framing::Done,
                        rest => Framing::Length(rest),
                    };
                    return Ok(Some(self.buf.split_to(take as usize).freeze()));
                }
                Framing::Close => {
                    if self.buf.is_empty() && self.fill_body().await? == 0 {
                        self.framing = Framing::Done;
                        return Ok(None);
                    }
                    return Ok(Some(self.buf.split().freeze()));
                }
                Framing::Chunked(state) => match self.chunked_step(state)? {
                    Step::Data(data) => return Ok(Some(data)),
                    Step::Progress => {}
                    Step::NeedMore => {
                        if self.fill_body().await? == 0 {
                            return Err(self.cut_off());
                        }
                    }
                },
            }
        }
    }

    /// Advance the chunked decoder over what is buffered; returns data when there is some.
    fn chunked_step(&mut self, state: Chunk) -> Result<Step, SendError> {
        match state {
            Chunk::Size => {
                let Some(end) = memchr::memmem::find(&self.buf, b"\r\n") else {
                    if self.buf.len() > MAX_CHUNK_LINE {
                        return Err(
                            self.protocol("a chunk-size line from the agent is too long".into())
                        );
                    }
                    return Ok(Step::NeedMore);
                };
                let line = &self.buf[..end];
                let digits_end = line
                    .iter()
                    .position(|b| !b.is_ascii_hexdigit())
                    .unwrap_or(line.len());
                let rest = line[digits_end..].trim_ascii_start();
                if digits_end == 0 || digits_end > 15 || !(rest.is_empty() || rest[0] == b';') {
                    return Err(self.protocol(format!(
                        "invalid chunk size from the agent: {:?}",
                        String::from_utf8_lossy(&line[..line.len().min(40)])
                    )));
                }
                let size = std::str::from_utf8(&line[..digits_end])
                    .ok()
                    .and_then(|d| u64::from_str_radix(d, 16).ok())
                    .unwrap_or(0);
                self.buf.advance(end + 2);
                self.framing = Framing::Chunked(if size == 0 {
                    Chunk::Trailers(0)
                } else {
                    Chunk::Data(size)
                });
                Ok(Step::Progress)
            }
            Chunk::Data(left) => {
                if self.buf.is_empty() {
                    return Ok(Step::NeedMore);
                }
                let take = (self.buf.len() as u64).min(left);
                self.framing = Framing::Chunked(match left - take {
                    0 => Chunk::DataEnd,
                    rest => Chunk::Data(rest),
                });
                Ok(Step::Data(self.buf.split_to(take as usize).freeze()))
            }
            Chunk::DataEnd => {
                if self.buf.len() < 2 {
                    return Ok(Step::NeedMore);
                }
                if &self.buf[..2] != b"\r\n" {
                    return Err(
                        self.protocol("a chunk from the agent does not end with CRLF".into())
                    );
                }
                self.buf.advance(2);
                self.framing = Framing::Chunked(Chunk::Size);
                Ok(Step::Progress)
            }
            Chunk::Trailers(seen) => {
                // Trailer fields are read and dropped; an empty line ends the body.
                let Some(end) = memchr::memmem::find(&self.buf, b"\r\n") else {
                    if seen + self.buf.len() > MAX_TRAILERS {
                        return Err(self.protocol("the agent's trailers are too long".into()));
                    }
                    return Ok(Step::NeedMore);
                };
                self.buf.advance(end + 2);
                self.framing = if end == 0 {
                    Framing::Done
                } else if seen + end > MAX_TRAILERS {
                    return Err(self.protocol("the agent's trailers are too long".into()));
                } else {
                    Framing::Chunked(Chunk::Trailers(seen + end + 2))
                };
                Ok(Step::Progress)
            }
        }
    }

    async fn fill_body(&mut self) -> Result<usize, SendError> {
        let n = self.fill("reading the agent's response").await?;
        if n == 0 {
            self.keep_alive = false;
        }
        Ok(n)
    }

    fn cut_off(&mut self) -> SendError {
        self.closed_by_agent = true;
        SendError {
            error: UpstreamError::new(
                UpstreamErrorKind::Reset,
                "connection lost (the agent closed the connection before the end of the response)",
            ),
            retryable: false,
        }
    }
}

/// Fields that describe one hop (RFC 9110 §7.6.1), passed on in neither direction, besides
/// those a `Connection` field lists. In answers, `Content-Length` and `Transfer-Encoding`
/// stay: the server side frames the answer to the client from them.
pub(crate) fn is_hop_by_hop(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
}

/// The length of the response head through the empty line that ends it, once it is all in
/// `buf` (CRLF or bare LF line ends, as httparse accepts).
fn head_end(buf: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\n', buf).find_map(|i| match &buf[i + 1..] {
        [b'\n', ..] => Some(i + 2),
        [b'\r', b'\n', ..] => Some(i + 3),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::head_end;

    #[test]
    fn a_head_ends_at_the_first_empty_line() {
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"), Some(25));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\nA: b\n\nbody"), Some(22));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n\r"), None);
        assert_eq!(head_end(b""), None);
    }
}
