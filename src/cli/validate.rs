//! `cardgate validate` (being written).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn main(_args: Args) -> ExitCode {
    eprintln!("cardgate validate: not available in this build yet");
    ExitCode::from(2)
}
