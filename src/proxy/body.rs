//! Reading request bodies under limits: size, time, and a gateway-wide memory budget.
//!
//! Strict mode (the default) reads the whole body, feeding each chunk to a check as it
//! arrives, before the agent is contacted: a rejected request never opens a connection to
//! the agent. The alternatives (holding chunks back in `request_body_filter`, or pingora's
//! alpha subrequest API) either send the request header to the agent for every request or
//! depend on an unstable API; see `../shared/notes/strict-forwarding.md`. The cost is
//! store-and-forward latency and memory, bounded by `max_body_bytes` per request and
//! `limits.inflight_body_bytes` for all requests together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pingora::proxy::Session;

use crate::metrics::metrics;

/// Request body bytes held in memory by all requests, against a budget.
pub struct InflightBudget {
    held: AtomicU64,
    limit: AtomicU64,
}

impl InflightBudget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            held: AtomicU64::new(0),
            limit: AtomicU64::new(limit),
        })
    }

    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }
}

/// Bytes one request holds; given back when dropped.
pub struct Reservation {
    budget: Arc<InflightBudget>,
    bytes: u64,
}

impl Reservation {
    pub fn new(budget: &Arc<InflightBudget>) -> Self {
        Self {
            budget: budget.clone(),
            bytes: 0,
        }
    }

    /// Take `n` more bytes; false (and nothing taken) if the budget would be exceeded.
    fn grow(&mut self, n: u64) -> bool {
        let limit = self.budget.limit.load(Ordering::Relaxed);
        let ok = self
            .budget
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held + n <= limit).then_some(held + n)
            })
            .is_ok();
        if ok {
            self.bytes += n;
            metrics().inflight_body_bytes.add(n as i64);
        }
        ok
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
        metrics().inflight_body_bytes.sub(self.bytes as i64);
    }
}

/// Why a body was not read to its end.
#[derive(Debug)]
pub enum BodyError<R> {
    /// More than `limit` bytes arrived.
    TooLarge { limit: u64, read: u64 },
    /// The client took longer than `limit` to send the body.
    Timeout { limit: Duration, read: u64 },
    /// The gateway's memory budget for bodies is used up.
    Budget,
    /// The check rejected the body.
    Rejected(R),
    /// The client went away or sent a broken body.
    Client(Box<pingora::Error>),
}

/// A body read to its end, held in memory.
pub struct Body {
    pub chunks: Vec<Bytes>,
    pub len: u64,
    pub reservation: Reservation,
}

/// Read the whole body, calling `check` on each chunk as it arrives. Stops at the first
/// problem without reading further.
pub async fn read_strict<R>(
    session: &mut Session,
    max_bytes: u64,
    read_timeout: Duration,
    budget: &Arc<InflightBudget>,
    mut check: impl FnMut(&[u8]) -> Result<(), R>,
) -> Result<Body, BodyError<R>> {
    let mut body = Body {
        chunks: Vec::new(),
        len: 0,
        reservation: Reservation::new(budget),
    };
    let deadline = Instant::now() + read_timeout;
    loop {
        let next = match tokio::time::timeout_at(deadline.into(), session.read_request_body()).await
        {
            Ok(next) => next,
            Err(_) => {
                return Err(BodyError::Timeout {
                    limit: read_timeout,
                    read: body.len,
                })
            }
        };
        let chunk = match next {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(body),
            Err(e) => return Err(BodyError::Client(e)),
        };
        if chunk.is_empty() {
            continue;
        }
        let n = chunk.len() as u64;
        if body.len + n > max_bytes {
            return Err(BodyError::TooLarge {
                limit: max_bytes,
                read: body.len + n,
            });
        }
        if !body.reservation.grow(n) {
            return Err(BodyError::Budget);
        }
        check(&chunk).map_err(BodyError::Rejected)?;
        body.len += n;
        body.chunks.push(chunk);
    }
}

/// After answering early: read and discard what the client still sends, for a bounded
/// time and size, so it reads our answer instead of a connection reset. Returns the bytes
/// discarded.
pub async fn linger(session: &mut Session, max_time: Duration, max_bytes: u64) -> u64 {
    let deadline = Instant::now() + max_time;
    let mut discarded = 0u64;
    while discarded < max_bytes {
        match tokio::time::timeout_at(deadline.into(), session.read_request_body()).await {
            Ok(Ok(Some(chunk))) => discarded += chunk.len() as u64,
            _ => break,
        }
    }
    discarded
}
