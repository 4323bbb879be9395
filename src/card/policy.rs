//! Card + operator overrides → the compiled policy the scanner enforces. Done once per card
//! (on fetch or config reload), never per request.

use std::sync::Arc;

use serde_json::Value;

use crate::card::constraints::{FileConstraints, InputConstraints, TextConstraints};
use crate::card::FieldIssue;
use crate::scan::{Policy, ScanOptions};

/// Which checks run for an agent (gateway.yaml `enforce:`), and the scanner settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOptions {
    pub enforce_files: bool,
    pub enforce_media_types: bool,
    pub enforce_text: bool,
    pub scan: ScanOptions,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            enforce_files: true,
            enforce_media_types: true,
            enforce_text: true,
            scan: ScanOptions::default(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    pub policy: Arc<Policy>,
    /// Card ∧ overrides: the limits to advertise in the served card. The `enforce:` switches do
    /// not change it (they only stop the gateway checking; the agent's limits still hold).
    pub effective: InputConstraints,
    /// `defaultInputModes` ∪ `skills[].inputModes`, in card order without repeats;
    /// `None` = no restriction (none declared, or the union is empty).
    pub accepted_modes: Option<Vec<String>>,
    /// Malformed extension fields and input modes, with their paths.
    pub issues: Vec<FieldIssue>,
}

/// Compile a card (and the operator's `constraints:` for it, if any).
pub fn compile(
    card: &Value,
    overrides: Option<&InputConstraints>,
    opts: &PolicyOptions,
) -> CompiledPolicy {
    let (from_card, mut issues) = InputConstraints::from_card(card).unwrap_or_default();
    let effective = match overrides {
        Some(o) => from_card.stricter(o),
        None => from_card,
    };
    let accepted_modes = accepted_modes(card, &mut issues);
    let enforced = InputConstraints {
        files: if opts.enforce_files {
            effective.files.clone()
        } else {
            FileConstraints::default()
        },
        text: if opts.enforce_text {
            effective.text.clone()
        } else {
            TextConstraints::default()
        },
    };
    let modes = if opts.enforce_media_types {
        accepted_modes.as_deref()
    } else {
        None
    };
    let policy = Arc::new(Policy::new(&enforced, modes, opts.scan.clone()));
    CompiledPolicy {
        policy,
        effective,
        accepted_modes,
        issues,
    }
}

fn accepted_modes(card: &Value, issues: &mut Vec<FieldIssue>) -> Option<Vec<String>> {
    let mut modes: Vec<String> = Vec::new();
    let mut collect = |value: Option<&Value>, path: String, issues: &mut Vec<FieldIssue>| {
        let Some(value) = value else { return };
        let Some(list) = value.as_array() else {
            issues.push(FieldIssue::new(
                path,
                "expected an array of media types; ignored",
            ));
            return;
        };
        for (i, m) in list.iter().enumerate() {
            match m.as_str() {
                Some(s) if !s.trim().is_empty() => {
                    if !modes.iter().any(|have| have.eq_ignore_ascii_case(s.trim())) {
                        modes.push(s.trim().to_owned());
                    }
                }
                _ => issues.push(FieldIssue::new(
                    format!("{path}[{i}]"),
                    format!("expected a media type string, got {m}; ignored"),
                )),
            }
        }
    };
    collect(
        card.get("defaultInputModes"),
        "defaultInputModes".into(),
        issues,
    );
    if let Some(skills) = card.get("skills").and_then(Value::as_array) {
        for (i, skill) in skills.iter().enumerate() {
            collect(
                skill.get("inputModes"),
                format!("skills[{i}].inputModes"),
                issues,
            );
        }
    }
    (!modes.is_empty()).then_some(modes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::INPUT_CONSTRAINTS_URI;
    use crate::scan::{BodyShape, Scanner};
    use serde_json::json;

    fn card(params: Value) -> Value {
        json!({
            "name": "a", "capabilities": {"extensions": [{"uri": INPUT_CONSTRAINTS_URI, "params": params}]},
            "defaultInputModes": ["text/plain", "image/png"],
            "skills": [{"id": "s", "inputModes": ["application/pdf", "TEXT/PLAIN"]}, {"id": "t", "inputModes": [5]}]
        })
    }

    fn scan(c: &CompiledPolicy, body: &Value) -> Result<(), String> {
        let mut s = Scanner::new(c.policy.clone(), BodyShape::JsonRpc);
        s.feed(&serde_json::to_vec(body).unwrap())
            .map_err(|v| v.reason().to_owned())?;
        s.finish().map(|_| ()).map_err(|v| v.reason().to_owned())
    }

    fn one_file(media_type: &str, raw: &str) -> Value {
        json!({"params": {"message": {"parts": [{"raw": raw, "mediaType": media_type}]}}})
    }

    #[test]
    fn compiles_card_limits_and_modes() {
        let c = compile(
            &card(json!({"files": {"maxSizePerFileBytes": 3}})),
            None,
            &PolicyOptions::default(),
        );
        assert_eq!(
            c.accepted_modes.as_deref(),
            Some(
                &[
                    "text/plain".to_owned(),
                    "image/png".into(),
                    "application/pdf".into()
                ][..]
            )
        );
        assert_eq!(c.issues.len(), 1);
        assert_eq!(c.issues[0].field, "skills[1].inputModes[0]");
        assert_eq!(c.effective.files.max_size_per_file_bytes, Some(3));
        assert!(c.policy.enforces_anything());
        assert_eq!(scan(&c, &one_file("text/plain", "AAAA")), Ok(()));
        assert_eq!(
            scan(&c, &one_file("text/plain", "AAAAAAAA")),
            Err("file_size".into())
        );
        assert_eq!(
            scan(&c, &one_file("audio/wav", "")),
            Err("media_type".into())
        );
    }

    #[test]
    fn overrides_tighten_and_cannot_be_loosened_by_the_card() {
        let (ops, _) = InputConstraints::parse(
            &json!({"files": {"maxSizePerFileBytes": 1, "maxCountPerRequest": 9}}),
            "agents[0].constraints",
        );
        let c = compile(
            &card(json!({"files": {"maxSizePerFileBytes": 3, "maxCountPerRequest": 1}})),
            Some(&ops),
            &PolicyOptions::default(),
        );
        assert_eq!(c.effective.files.max_size_per_file_bytes, Some(1));
        assert_eq!(c.effective.files.max_count_per_request, Some(1));
        assert_eq!(
            scan(&c, &one_file("text/plain", "AAAA")),
            Err("file_size".into())
        );
        // Overrides alone, for a card without the extension.
        let bare = json!({"name": "b"});
        let c = compile(&bare, Some(&ops), &PolicyOptions::default());
        assert_eq!(c.effective, ops);
        assert_eq!(c.accepted_modes, None);
        assert!(c.issues.is_empty());
    }

    #[test]
    fn enforce_switches_turn_checks_off_but_keep_the_advertised_limits() {
        let opts = PolicyOptions {
            enforce_files: false,
            enforce_media_types: false,
            enforce_text: false,
            ..PolicyOptions::default()
        };
        let c = compile(
            &card(json!({"files": {"maxSizePerFileBytes": 1}, "text": {"maxCharacters": 1}})),
            None,
            &opts,
        );
        assert!(!c.policy.enforces_anything());
        assert_eq!(c.effective.files.max_size_per_file_bytes, Some(1));
        assert_eq!(scan(&c, &one_file("audio/wav", "AAAA")), Ok(()));
    }

    #[test]
    fn malformed_extension_fields_are_reported_with_paths() {
        let c = compile(
            &card(json!({"files": {"maxSizePerFileBytes": -5}})),
            None,
            &PolicyOptions::default(),
        );
        assert!(c.issues.iter().any(|i| i.field
            == "capabilities.extensions[0].params.files.maxSizePerFileBytes"
            && i.message.contains("-5")));
        assert_eq!(c.effective.files.max_size_per_file_bytes, None);
        let no_ext = compile(
            &json!({"defaultInputModes": "text/plain"}),
            None,
            &PolicyOptions::default(),
        );
        assert_eq!(no_ext.issues[0].field, "defaultInputModes");
        assert!(!no_ext.policy.enforces_anything());
    }
}
