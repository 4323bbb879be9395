//! `cardgate validate FILE|URL|-`: validate an agent card and print a report.
//!
//! Exit codes: 0 valid, 1 invalid, 2 unreadable or not JSON.

use std::io::{Read, Write};
use std::process::ExitCode;

use crate::card::validate::validate_bytes;

/// Cards are a few KiB; anything this large is refused before parsing.
pub const MAX_CARD_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The card: a file path, an http(s) URL, or `-` for standard input.
    pub source: String,

    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

const EXIT_INVALID: u8 = 1;
const EXIT_UNREADABLE: u8 = 2;

pub fn main(args: Args) -> ExitCode {
    let bytes = match read_source(&args.source) {
        Ok(bytes) => bytes,
        Err(reason) => {
            eprintln!("cardgate validate: cannot read {}: {reason}", args.source);
            return ExitCode::from(EXIT_UNREADABLE);
        }
    };
    let report = match validate_bytes(&bytes) {
        Ok(report) => report,
        Err(not_json) => {
            eprintln!("cardgate validate: {}: {not_json}", args.source);
            return ExitCode::from(EXIT_UNREADABLE);
        }
    };
    let rendered = match args.format {
        Format::Text => report.render_text(),
        // Serialized from the struct, so the keys keep the documented order; the value is
        // exactly `report.to_json()`.
        Format::Json => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
    };
    // A closed pipe (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(rendered.as_bytes());
    if report.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INVALID)
    }
}

/// The card's bytes from a file, standard input (`-`) or a URL.
fn read_source(source: &str) -> Result<Vec<u8>, String> {
    let lower = source.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return fetch_url(source);
    }
    if source == "-" {
        return read_bounded(std::io::stdin().lock());
    }
    let file = std::fs::File::open(source).map_err(|err| err.to_string())?;
    read_bounded(file)
}

/// Fetch a card with the gateway's own HTTP client, under the default agent timeouts.
fn fetch_url(url: &str) -> Result<Vec<u8>, String> {
    let response = crate::upstream::get_blocking(url, MAX_CARD_BYTES).map_err(|e| e.to_string())?;
    match response.status {
        200 => Ok(response.body),
        status => Err(format!("HTTP {status}")),
    }
}

fn read_bounded(reader: impl Read) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_CARD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    if bytes.len() as u64 > MAX_CARD_BYTES {
        return Err(format!(
            "larger than the {MAX_CARD_BYTES}-byte limit for a card"
        ));
    }
    Ok(bytes)
}
