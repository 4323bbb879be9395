//! Table-driven validation of the cards in tests/data/cards/: the detected version, the verdict
//! and the exact JSON paths of every error and warning.

use cardgate::card::validate::{
    validate, validate_bytes, ExtensionPreview, InterfacePreview, Report, SecuritySchemePreview,
};
use cardgate::card::version::{detect, SpecVersion};
use cardgate::card::FieldIssue;
use serde_json::{json, Value};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/cards/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn report(name: &str) -> Report {
    validate_bytes(&fixture(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn sorted_fields(issues: &[FieldIssue]) -> Vec<&str> {
    let mut fields: Vec<&str> = issues.iter().map(|issue| issue.field.as_str()).collect();
    fields.sort_unstable();
    fields
}

fn message<'r>(issues: &'r [FieldIssue], field: &str) -> &'r str {
    issues
        .iter()
        .find(|issue| issue.field == field)
        .map(|issue| issue.message.as_str())
        .unwrap_or_else(|| panic!("no issue at {field}: {issues:?}"))
}

struct Case {
    file: &'static str,
    version: SpecVersion,
    errors: &'static [&'static str],
    warnings: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        file: "v03_full.json",
        version: SpecVersion::V0_3,
        errors: &[],
        warnings: &[],
    },
    // a2a-sdk 1.3.0's v0.3 compat layer (to_compat_agent_card).
    Case {
        file: "v03_sdk_compat.json",
        version: SpecVersion::V0_3,
        errors: &[],
        warnings: &[],
    },
    Case {
        file: "v10_full.json",
        version: SpecVersion::V1_0,
        errors: &[],
        warnings: &[],
    },
    // Captured from a2a-sdk 1.3.0: both shapes at once, and no warning for carrying them.
    Case {
        file: "hybrid_sdk_echo.json",
        version: SpecVersion::Hybrid,
        errors: &[],
        warnings: &[],
    },
    Case {
        file: "hybrid_sdk_constraints.json",
        version: SpecVersion::Hybrid,
        errors: &[],
        warnings: &[],
    },
    Case {
        file: "legacy_url_only.json",
        version: SpecVersion::V0_3,
        errors: &[],
        warnings: &["protocolVersion"],
    },
    Case {
        file: "deprecated_v03.json",
        version: SpecVersion::V0_3,
        errors: &[],
        warnings: &[
            "additionalInterfaces[0].url",
            "capabilities.stateTransitionHistory",
            "defaultInputModes[0]",
            "securitySchemes.legacy.flows.implicit",
            "securitySchemes.legacy.flows.password",
            "url",
        ],
    },
    Case {
        file: "deprecated_v10.json",
        version: SpecVersion::V1_0,
        errors: &[],
        warnings: &[
            "capabilities.stateTransitionHistory",
            "preferredTransport",
            "securitySchemes.legacy.oauth2SecurityScheme.flows.implicit",
            "skills[1].id",
            "skills[1].security",
            "supportedInterfaces[0].url",
            "supportedInterfaces[1].protocolBinding",
            "supportedInterfaces[1].protocolVersion",
            "supportsAuthenticatedExtendedCard",
        ],
    },
    Case {
        file: "err_missing_required.json",
        version: SpecVersion::V0_3,
        errors: &[
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "description",
            "name",
            "skills",
            "version",
        ],
        warnings: &[],
    },
    Case {
        file: "err_wrong_types.json",
        version: SpecVersion::V1_0,
        errors: &[
            "capabilities.pushNotifications",
            "capabilities.streaming",
            "defaultInputModes",
            "defaultOutputModes[1]",
            "description",
            "documentationUrl",
            "name",
            "provider.url",
            "signatures[0].signature",
            "signatures[1]",
            "skills",
            "version",
        ],
        warnings: &[],
    },
    Case {
        file: "err_skills.json",
        version: SpecVersion::V0_3,
        errors: &[
            "skills[0].tags[1]",
            "skills[1].id",
            "skills[2]",
            "skills[3].examples[0]",
            "skills[3].id",
            "skills[3].inputModes",
            "skills[3].name",
            "skills[3].tags",
        ],
        // Empty required values are errors in v1.0 but only warnings in v0.3.
        warnings: &["skills[1].tags", "skills[3].description"],
    },
    Case {
        file: "err_v10_interfaces.json",
        version: SpecVersion::V1_0,
        errors: &[
            "defaultOutputModes",
            "skills",
            "supportedInterfaces[0].protocolBinding",
            "supportedInterfaces[1].protocolVersion",
            "supportedInterfaces[1].url",
            "supportedInterfaces[2].protocolBinding",
            "supportedInterfaces[2].protocolVersion",
            "supportedInterfaces[2].tenant",
            "supportedInterfaces[2].url",
            "supportedInterfaces[3]",
        ],
        warnings: &[],
    },
    Case {
        file: "err_v03_endpoints.json",
        version: SpecVersion::V0_3,
        errors: &[
            "additionalInterfaces[0].transport",
            "additionalInterfaces[1].url",
            "additionalInterfaces[2].url",
            "capabilities",
            "preferredTransport",
            "protocolVersion",
            "supportsAuthenticatedExtendedCard",
            "url",
        ],
        warnings: &["skills"],
    },
    Case {
        file: "err_extensions.json",
        version: SpecVersion::V1_0,
        errors: &[
            "capabilities.extensions[0].uri",
            "capabilities.extensions[1].required",
            "capabilities.extensions[2].params",
            "capabilities.extensions[3].description",
            "capabilities.extensions[3].uri",
            "capabilities.extensions[4]",
        ],
        warnings: &[],
    },
    Case {
        file: "err_security_v03.json",
        version: SpecVersion::V0_3,
        errors: &[
            "security[0].ghost",
            "security[1].basic",
            "securitySchemes.basic.scheme",
            "securitySchemes.key.in",
            "securitySchemes.key.name",
            "securitySchemes.list",
            "securitySchemes.oauth.flows",
            "securitySchemes.oidc.openIdConnectUrl",
            "securitySchemes.saml.type",
            "securitySchemes.wrapped.type",
            "securitySchemes[\"oauth code\"].flows.authorizationCode.scopes.s",
            "securitySchemes[\"oauth code\"].flows.authorizationCode.tokenUrl",
            "securitySchemes[\"oauth none\"].flows",
            "skills[0].security[0].phantom",
        ],
        warnings: &[],
    },
    Case {
        file: "err_security_v10.json",
        version: SpecVersion::V1_0,
        errors: &[
            "securityRequirements[0].schemes.ghost",
            "securityRequirements[0].schemes.key.list[1]",
            "securityRequirements[1].schemes",
            "securitySchemes.bad.httpAuthSecurityScheme",
            "securitySchemes.flows.oauth2SecurityScheme.flows",
            "securitySchemes.flows.oauth2SecurityScheme.flows.deviceCode.deviceAuthorizationUrl",
            "securitySchemes.key.apiKeySecurityScheme.location",
            "securitySchemes.noflow.oauth2SecurityScheme.flows",
            "securitySchemes.oidc.openIdConnectSecurityScheme.openIdConnectUrl",
            "securitySchemes.openapi",
            "securitySchemes.two",
            "skills[0].securityRequirements[0].schemes.phantom",
        ],
        warnings: &[],
    },
    Case {
        file: "err_hybrid.json",
        version: SpecVersion::Hybrid,
        errors: &[
            "additionalInterfaces[0].transport",
            "securitySchemes.empty",
            "supportedInterfaces[0].protocolVersion",
        ],
        // Not `supportsAuthenticatedExtendedCard`: a hybrid card carries it for v0.3 clients.
        warnings: &["url"],
    },
    Case {
        file: "err_no_endpoint.json",
        version: SpecVersion::Unknown,
        errors: &["supportedInterfaces"],
        warnings: &[],
    },
    Case {
        file: "err_not_object.json",
        version: SpecVersion::Unknown,
        errors: &["$"],
        warnings: &[],
    },
];

#[test]
fn every_fixture_reports_exactly_the_expected_paths() {
    let mut failures = Vec::new();
    for case in CASES {
        let report = report(case.file);
        let mut expected_errors = case.errors.to_vec();
        expected_errors.sort_unstable();
        let mut expected_warnings = case.warnings.to_vec();
        expected_warnings.sort_unstable();
        let got = (
            report.spec_version,
            report.valid,
            sorted_fields(&report.errors),
            sorted_fields(&report.warnings),
        );
        let want = (
            case.version,
            case.errors.is_empty(),
            expected_errors,
            expected_warnings,
        );
        if got != want {
            failures.push(format!(
                "{}:\n  got  {got:?}\n  want {want:?}\n  errors {:#?}\n  warnings {:#?}",
                case.file, report.errors, report.warnings
            ));
        }
        assert_eq!(
            report.preview.is_some(),
            report.valid,
            "{}: a preview exactly for a valid card",
            case.file
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_in_the_directory_is_in_the_table() {
    let dir = format!("{}/tests/data/cards", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".json") {
            assert!(
                CASES.iter().any(|case| case.file == name),
                "{name} has no row in CASES"
            );
        }
    }
}

#[test]
fn messages_name_the_expectation_and_the_actual_value() {
    let wrong = report("err_wrong_types.json");
    assert_eq!(
        message(&wrong.errors, "name"),
        "expected a string, found number 42"
    );
    assert_eq!(
        message(&wrong.errors, "capabilities.streaming"),
        "expected a boolean, found string \"yes\""
    );
    assert_eq!(message(&wrong.errors, "version"), "required field is null");
    assert_eq!(
        message(&wrong.errors, "skills"),
        "expected an array, found an object with 1 field"
    );

    let missing = report("err_missing_required.json");
    assert_eq!(
        message(&missing.errors, "name"),
        "required field is missing"
    );

    let security = report("err_security_v03.json");
    assert_eq!(
        message(&security.errors, "securitySchemes.key.in"),
        "expected \"query\", \"header\" or \"cookie\", found \"body\""
    );
    assert!(message(&security.errors, "securitySchemes.saml.type").contains("\"saml\""));
    assert!(message(&security.errors, "security[0].ghost").contains("\"ghost\""));

    let v10 = report("err_security_v10.json");
    assert!(message(
        &v10.errors,
        "securitySchemes.flows.oauth2SecurityScheme.flows"
    )
    .ends_with("found 2: clientCredentials, deviceCode"),);
    assert!(message(&v10.errors, "securitySchemes.openapi").contains("v0.3 only"));

    let interfaces = report("err_v10_interfaces.json");
    assert_eq!(
        message(&interfaces.errors, "supportedInterfaces[2].url"),
        "must not be an empty string"
    );

    let endpoints = report("err_v03_endpoints.json");
    assert_eq!(
        message(&endpoints.errors, "additionalInterfaces[2].url"),
        "must not be an empty string"
    );

    let deprecated = report("deprecated_v03.json");
    assert_eq!(
        message(&deprecated.warnings, "url"),
        "endpoint is not an absolute http(s) URL: \"ftp://agent.example.com/a2a\""
    );
    assert!(message(
        &deprecated.warnings,
        "securitySchemes.legacy.flows.implicit"
    )
    .contains("implicit flow is removed in A2A v1.0"));

    let v10_deprecated = report("deprecated_v10.json");
    assert!(message(
        &v10_deprecated.warnings,
        "supportsAuthenticatedExtendedCard"
    )
    .contains("capabilities.extendedAgentCard"));
}

#[test]
fn hybrid_preview_lists_the_v1_0_interfaces_and_the_effective_constraints() {
    let report = report("hybrid_sdk_constraints.json");
    let preview = report.preview.expect("valid card has a preview");
    assert_eq!(preview.name, "Vision");
    assert_eq!(preview.description, "describes images");
    assert_eq!(preview.spec_version, SpecVersion::Hybrid);
    let interfaces: Vec<(&str, &str)> = preview
        .interfaces
        .iter()
        .map(|interface| (interface.binding.as_str(), interface.version.as_str()))
        .collect();
    assert_eq!(
        interfaces,
        [("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "0.3")]
    );
    assert_eq!(
        preview.extensions,
        [ExtensionPreview {
            uri: "https://inkeep.com/a2a-extensions/input-constraints/v1".into(),
            required: false,
        }]
    );
    assert_eq!(
        preview.security_schemes,
        [
            SecuritySchemePreview {
                name: "apiKey".into(),
                scheme_type: "apiKey".into()
            },
            SecuritySchemePreview {
                name: "oauth".into(),
                scheme_type: "oauth2".into()
            },
        ]
    );
    assert_eq!(preview.skills_count, 1);
    // The SDK writes 4.0 and 20000.0; the preview shows the limits as enforced.
    let constraints = preview.input_constraints.expect("extension params");
    assert_eq!(constraints["files"]["maxCountPerRequest"], json!(4));
    assert_eq!(constraints["text"]["maxCharacters"], json!(20000));
}

#[test]
fn v0_3_preview_merges_url_and_additional_interfaces() {
    let preview = report("v03_full.json").preview.expect("valid");
    assert_eq!(
        preview.interfaces,
        [
            InterfacePreview {
                url: "https://agent.example.com/a2a/jsonrpc".into(),
                binding: "JSONRPC".into(),
                version: "0.3.0".into(),
            },
            InterfacePreview {
                url: "https://agent.example.com/a2a/rest".into(),
                binding: "HTTP+JSON".into(),
                version: "0.3.0".into(),
            },
            InterfacePreview {
                url: "grpc.example.com:443".into(),
                binding: "GRPC".into(),
                version: "0.3.0".into(),
            },
        ]
    );
    let required: Vec<bool> = preview.extensions.iter().map(|ext| ext.required).collect();
    assert_eq!(required, [false, true]);
    let types: Vec<&str> = preview
        .security_schemes
        .iter()
        .map(|scheme| scheme.scheme_type.as_str())
        .collect();
    // In the card's own order.
    assert_eq!(
        types,
        ["http", "apiKey", "oauth2", "openIdConnect", "mutualTLS"]
    );
    assert_eq!(preview.skills_count, 2);

    let legacy = report("legacy_url_only.json").preview.expect("valid");
    assert_eq!(
        legacy.interfaces,
        [InterfacePreview {
            url: "http://localhost:8000/".into(),
            binding: "JSONRPC".into(),
            version: "0.3.0".into(),
        }]
    );
    assert_eq!(legacy.input_constraints, None);
}

#[test]
fn v1_0_preview_maps_wrappers_to_scheme_types() {
    let preview = report("v10_full.json").preview.expect("valid");
    let schemes: Vec<(&str, &str)> = preview
        .security_schemes
        .iter()
        .map(|scheme| (scheme.name.as_str(), scheme.scheme_type.as_str()))
        .collect();
    assert_eq!(
        schemes,
        [
            ("key", "apiKey"),
            ("bearer", "http"),
            ("oauth", "oauth2"),
            ("device", "oauth2"),
            ("oidc", "openIdConnect"),
            ("mtls", "mutualTLS"),
        ]
    );
    assert!(preview.extensions[0].required);
    assert_eq!(
        preview.input_constraints,
        Some(json!({"files": {"maxTotalSizeBytes": 20971520}}))
    );
}

#[test]
fn to_json_has_the_documented_shape() {
    let invalid = report("err_missing_required.json").to_json();
    assert_eq!(invalid["valid"], json!(false));
    assert_eq!(invalid["spec_version"], json!("0.3"));
    assert_eq!(invalid["preview"], Value::Null);
    assert_eq!(
        invalid["errors"][0],
        json!({"field": "name", "message": "required field is missing"})
    );
    assert_eq!(invalid["warnings"], json!([]));

    let valid = report("hybrid_sdk_echo.json").to_json();
    let keys: Vec<&String> = valid.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["valid", "spec_version", "errors", "warnings", "preview"]
    );
    assert_eq!(valid["spec_version"], json!("hybrid"));
    assert_eq!(valid["preview"]["skills_count"], json!(1));
    assert_eq!(
        valid["preview"]["interfaces"][2],
        json!({"url": "http://127.0.0.1:54321/rest", "binding": "HTTP+JSON", "version": "1.0"})
    );
    assert_eq!(valid["preview"]["input_constraints"], Value::Null);
}

#[test]
fn render_text_shows_verdict_issues_and_preview() {
    let invalid = report("err_skills.json").render_text();
    assert!(invalid.starts_with("card is INVALID (spec version: 0.3; 8 errors, 2 warnings)"));
    assert!(invalid.contains("\n  skills[1].id: required field is missing\n"));
    assert!(invalid.contains("\nwarnings:\n"));
    assert!(!invalid.contains("preview:"));

    let valid = report("v10_full.json").render_text();
    assert!(valid.starts_with("card is valid (spec version: 1.0; 0 errors, 0 warnings)"));
    assert!(valid.contains("\n    GRPC 1.0  grpc.travel.example.com:443\n"));
    assert!(
        valid.contains("\n    https://inkeep.com/a2a-extensions/input-constraints/v1 (required)\n")
    );
    assert!(valid.contains("\n    device: oauth2\n"));
    assert!(valid.contains("\n  skills:            1\n"));
    assert!(valid.contains("\"maxTotalSizeBytes\":20971520"));
}

#[test]
fn hostile_strings_cannot_drive_the_terminal() {
    let card = json!({
        "name": "evil\u{1b}[2J\u{7}",
        "description": "line\nbreak",
        "url": "https://agent.example.com/\u{1b}]0;title\u{7}",
        "version": "1",
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "s", "tags": ["s"]}],
        "securitySchemes": {"\u{1b}[31m": {"type": "mutualTLS"}}
    });
    let text = validate(&card).render_text();
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(!text.contains('\u{7}'), "{text}");
    assert!(text.contains("line\\u{a}break"), "{text}");
}

#[test]
fn detect_agrees_with_validate() {
    for case in CASES {
        let card: Value = serde_json::from_slice(&fixture(case.file)).unwrap();
        assert_eq!(detect(&card), case.version, "{}", case.file);
    }
}

#[test]
fn not_json_is_an_error_not_a_report() {
    let err = validate_bytes(&fixture("not_json.txt")).unwrap_err();
    assert_eq!((err.line, err.column), (4, 0));
    assert!(
        err.to_string().starts_with("not JSON: EOF while parsing"),
        "{err}"
    );
    assert!(validate_bytes(b"").is_err());
    assert!(
        validate_bytes(b"\xEF\xBB\xBF{}").is_err(),
        "a BOM is not JSON"
    );
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            prop::sample::select(vec![
                "",
                "url",
                "https://a/",
                "JSONRPC",
                "GRPC",
                "oauth2",
                "apiKey",
                "1.0",
                "x:1",
            ])
            .prop_map(|text| json!(text)),
            ".{0,12}".prop_map(Value::String),
        ];
        // Keys the validator looks at, so random values land where they are checked.
        let keys = prop::sample::select(vec![
            "name",
            "description",
            "version",
            "url",
            "supportedInterfaces",
            "protocolBinding",
            "protocolVersion",
            "capabilities",
            "extensions",
            "uri",
            "params",
            "skills",
            "id",
            "tags",
            "securitySchemes",
            "type",
            "flows",
            "implicit",
            "apiKeySecurityScheme",
            "oauth2SecurityScheme",
            "security",
            "securityRequirements",
            "schemes",
            "defaultInputModes",
            "additionalInterfaces",
        ]);
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(keys.clone(), inner, 0..6).prop_map(|map| {
                    Value::Object(map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn arbitrary_json_gives_a_consistent_report(card in any_json()) {
            let report = validate(&card);
            prop_assert_eq!(report.valid, report.errors.is_empty());
            prop_assert_eq!(report.preview.is_some(), report.valid);
            prop_assert_eq!(report.spec_version, detect(&card));
            prop_assert!(report.errors.iter().all(|issue| !issue.field.is_empty()));
            let _ = report.render_text();
        }

        #[test]
        fn a_valid_card_with_one_field_removed_never_panics(index in 0usize..64) {
            let mut card: Value = serde_json::from_slice(&fixture("v10_full.json")).unwrap();
            let keys: Vec<String> = card.as_object().unwrap().keys().cloned().collect();
            let key = &keys[index % keys.len()];
            card.as_object_mut().unwrap().remove(key);
            let report = validate(&card);
            // The required fields, and the schemes that securityRequirements refers to.
            let needed = ["name", "description", "supportedInterfaces", "version",
                "capabilities", "defaultInputModes", "defaultOutputModes", "skills",
                "securitySchemes"];
            prop_assert_eq!(report.valid, !needed.contains(&key.as_str()), "removed {}", key);
        }
    }
}
