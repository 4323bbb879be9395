//! cardgate: a gateway in front of A2A agents.
//!
//! The modules follow the data path: `config` (gateway.yaml) → `card` (fetch, validate,
//! rewrite, compile a policy) → `registry` (one immutable snapshot behind ArcSwap) →
//! `proxy` (pingora glue) → `scan` (the request-body scanner) → `admin` and `metrics`.
//! `card` and `scan` do no networking, so tests and benches drive them directly.

pub mod card;
pub mod cli;
pub mod scan;
