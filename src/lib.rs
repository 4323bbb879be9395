//! cardgate: a gateway in front of A2A agents.
//!
//! The modules follow the data path: `config` (gateway.yaml) → `registry` (cards fetched,
//! validated and prepared once, in one immutable snapshot behind ArcSwap) → `proxy`
//! (pingora glue: routing, local answers, body gating, forwarding) → `scan` (the request
//! body scanner) → `admin` and `metrics`. `card` and `scan` do no networking, so tests
//! and benches drive them directly.

// A `scan::Violation` (a rejection, with everything the client is told) is the rare, cold
// path; one type from the scanner to the answer beats boxing it at every layer.
#![allow(clippy::result_large_err)]

pub mod admin;
pub mod card;
pub mod cli;
pub mod config;
pub mod demo;
pub mod logging;
pub mod metrics;
pub mod proxy;
pub mod registry;
pub mod scan;
pub mod upstream;
