//! Sub-commands of the `cardgate` binary. `main.rs` only parses arguments and calls these.

pub mod run;
pub mod scan;
pub mod validate;
