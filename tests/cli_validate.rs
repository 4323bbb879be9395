//! `cardgate validate`: exit codes 0/1/2 and the text and JSON reports, run as a process.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

mod support;

fn cards_dir() -> String {
    format!("{}/tests/data/cards", env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cardgate"))
        .arg("validate")
        .args(args)
        .output()
        .expect("run cardgate")
}

fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cardgate"))
        .arg("validate")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cardgate");
    let mut stdin = child.stdin.take().unwrap();
    // The child may stop reading early (size limit), so a broken pipe here is fine.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().expect("wait for cardgate")
}

fn card(name: &str) -> String {
    format!("{}/{name}", cards_dir())
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn valid_card_exits_0_with_a_text_report() {
    let output = run(&[&card("hybrid_sdk_constraints.json")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with("card is valid (spec version: hybrid"),
        "{text}"
    );
    assert!(text.contains("  name:              Vision\n"), "{text}");
    assert!(
        text.contains("    HTTP+JSON 0.3  http://127.0.0.1:35949/v1\n"),
        "{text}"
    );
    assert!(
        text.contains("    https://inkeep.com/a2a-extensions/input-constraints/v1 (optional)\n"),
        "{text}"
    );
    assert!(text.contains("    oauth: oauth2\n"), "{text}");
    assert!(text.contains("  skills:            1\n"), "{text}");
    assert!(text.contains("  input constraints: {"), "{text}");
    assert!(text.contains("\"maxCountPerRequest\""), "{text}");
    assert!(stderr(&output).is_empty());
}

#[test]
fn valid_card_with_warnings_still_exits_0() {
    let output = run(&[&card("deprecated_v10.json")]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.contains("0 errors, 9 warnings"), "{text}");
    assert!(
        text.contains("\n  supportsAuthenticatedExtendedCard: removed in v1.0"),
        "{text}"
    );
}

#[test]
fn invalid_card_exits_1_and_lists_every_error_path() {
    let output = run(&[&card("err_v10_interfaces.json")]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.starts_with("card is INVALID (spec version: 1.0; 10 errors"),
        "{text}"
    );
    for path in [
        "supportedInterfaces[0].protocolBinding: required field is missing",
        "supportedInterfaces[1].protocolVersion: expected a string, found number 1.0",
        "supportedInterfaces[3]: expected an object, found null",
        "skills: must not be an empty array",
    ] {
        assert!(text.contains(&format!("\n  {path}\n")), "{path} in {text}");
    }
    assert!(!text.contains("preview:"));
}

#[test]
fn json_format_prints_the_report_as_json() {
    let output = run(&["--format", "json", &card("err_skills.json")]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    assert_eq!(report["valid"], json!(false));
    assert_eq!(report["spec_version"], json!("0.3"));
    assert_eq!(report["preview"], Value::Null);
    assert_eq!(report["errors"].as_array().unwrap().len(), 8);
    assert!(report["errors"]
        .as_array()
        .unwrap()
        .contains(&json!({"field": "skills[1].id", "message": "required field is missing"})));
    assert_eq!(report["warnings"].as_array().unwrap().len(), 2);

    // Same value the library gives.
    let bytes = std::fs::read(card("err_skills.json")).unwrap();
    let library = cardgate::card::validate::validate_bytes(&bytes).unwrap();
    assert_eq!(report, library.to_json());
}

#[test]
fn json_format_of_a_valid_card_has_the_preview() {
    let output = run(&[&card("v03_full.json"), "--format", "json"]);
    assert_eq!(output.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], json!(true));
    assert_eq!(report["preview"]["name"], json!("Recipe Agent"));
    assert_eq!(report["preview"]["spec_version"], json!("0.3"));
    assert_eq!(report["preview"]["skills_count"], json!(2));
    assert_eq!(
        report["preview"]["extensions"][1],
        json!({"uri": "https://example.com/ext/trace/v1", "required": true})
    );
    assert_eq!(
        report["preview"]["security_schemes"][0],
        json!({"name": "bearer", "type": "http"})
    );
}

#[test]
fn stdin_is_read_for_dash() {
    let bytes = std::fs::read(card("v10_full.json")).unwrap();
    let output = run_with_stdin(&["-"], &bytes);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("card is valid (spec version: 1.0;"));

    let output = run_with_stdin(&["-"], br#"{"name": "x"}"#);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn not_json_exits_2_naming_line_and_column() {
    let output = run(&[&card("not_json.txt")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let err = stderr(&output);
    assert!(
        err.contains("not JSON: EOF while parsing a list at line 4 column 0"),
        "{err}"
    );

    let output = run_with_stdin(&["--format", "json", "-"], b"{\"name\": }");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("line 1 column 10"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn missing_file_exits_2() {
    let missing = card("no_such_card.json");
    let output = run(&[&missing]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains(&format!("cannot read {missing}")), "{err}");
}

#[test]
fn oversized_input_exits_2_without_reading_it_all() {
    let limit = cardgate::cli::validate::MAX_CARD_BYTES as usize;
    let mut huge = vec![b' '; limit + 1];
    huge[0] = b'{';
    let output = run_with_stdin(&["-"], &huge);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&format!("larger than the {limit}-byte limit")),
        "{}",
        stderr(&output)
    );
}

#[test]
fn url_argument_fetches_the_card_from_a_real_agent() {
    let agent = support::SdkAgent::start(&[]);
    let url = format!("{}/.well-known/agent-card.json", agent.url());
    let output = run(&["--format", "json", &url]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["spec_version"], "hybrid");
    assert_eq!(report["preview"]["name"], "sdk test agent");
}

#[test]
fn unreachable_url_exits_2() {
    let port = support::free_port();
    let output = run(&[&format!(
        "http://127.0.0.1:{port}/.well-known/agent-card.json"
    )]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("connection failed"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn missing_argument_is_a_usage_error() {
    let output = run(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("Usage"), "{}", stderr(&output));
}
