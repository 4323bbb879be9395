//! Which A2A specification an agent card follows, read from the fields it carries.
//!
//! The endpoint fields decide first, because each version requires its own: v1.0 has
//! `supportedInterfaces`, v0.3 has a top-level `url`. a2a-sdk 1.x serves both at once (a v1.0 card
//! with the v0.3 fields merged in), which is `Hybrid`. Without either endpoint field the weaker
//! signals from seed 003 and notes/a2a-protocol.md §1 vote; a tie or no signal is `Unknown`.

use serde_json::{Map, Value};

/// The spec version a card follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SpecVersion {
    #[serde(rename = "0.3")]
    V0_3,
    #[serde(rename = "1.0")]
    V1_0,
    /// A v1.0 card that also carries the v0.3 fields (what a2a-sdk 1.x serves).
    #[serde(rename = "hybrid")]
    Hybrid,
    #[serde(rename = "unknown")]
    Unknown,
}

impl SpecVersion {
    /// The serialized name: "0.3", "1.0", "hybrid" or "unknown".
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::V0_3 => "0.3",
            SpecVersion::V1_0 => "1.0",
            SpecVersion::Hybrid => "hybrid",
            SpecVersion::Unknown => "unknown",
        }
    }

    /// Whether the card must satisfy the v1.0 rules.
    pub fn has_v1_0_shape(self) -> bool {
        matches!(self, SpecVersion::V1_0 | SpecVersion::Hybrid)
    }
}

impl std::fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The v1.0 `SecurityScheme` oneof members, each wrapping one scheme kind.
pub(crate) const V1_0_SCHEME_WRAPPERS: [&str; 5] = [
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
];

/// Top-level fields that exist only in v0.3 (removed in v1.0).
pub(crate) const V0_3_ONLY_TOP_LEVEL: [&str; 6] = [
    "url",
    "protocolVersion",
    "preferredTransport",
    "additionalInterfaces",
    "supportsAuthenticatedExtendedCard",
    "security",
];

/// Detects the spec version of `card`. Anything but a JSON object is `Unknown`.
pub fn detect(card: &Value) -> SpecVersion {
    let Some(card) = card.as_object() else {
        return SpecVersion::Unknown;
    };
    match (present(card, "supportedInterfaces"), present(card, "url")) {
        (true, true) => SpecVersion::Hybrid,
        (true, false) => SpecVersion::V1_0,
        (false, true) => SpecVersion::V0_3,
        (false, false) => match (has_v1_0_signal(card), has_v0_3_signal(card)) {
            (true, false) => SpecVersion::V1_0,
            (false, true) => SpecVersion::V0_3,
            _ => SpecVersion::Unknown,
        },
    }
}

/// ProtoJSON and pydantic both read `null` as "not set".
fn present(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).is_some_and(|value| !value.is_null())
}

fn has_v1_0_signal(card: &Map<String, Value>) -> bool {
    let extended_card_in_capabilities = card
        .get("capabilities")
        .and_then(Value::as_object)
        .is_some_and(|capabilities| present(capabilities, "extendedAgentCard"));
    extended_card_in_capabilities
        || present(card, "securityRequirements")
        || security_schemes(card).any(|scheme| {
            V1_0_SCHEME_WRAPPERS
                .iter()
                .any(|wrapper| present(scheme, wrapper))
        })
}

fn has_v0_3_signal(card: &Map<String, Value>) -> bool {
    let state_transition_history = card
        .get("capabilities")
        .and_then(Value::as_object)
        .is_some_and(|capabilities| present(capabilities, "stateTransitionHistory"));
    // An OpenAPI-style scheme (with `type`) also covers the implicit and password flows.
    state_transition_history
        || V0_3_ONLY_TOP_LEVEL.iter().any(|key| present(card, key))
        || security_schemes(card).any(|scheme| present(scheme, "type"))
}

fn security_schemes(card: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    card.get("securitySchemes")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|schemes| schemes.values())
        .filter_map(Value::as_object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_fields_decide_first() {
        let both = json!({"supportedInterfaces": [], "url": "http://a/"});
        assert_eq!(detect(&both), SpecVersion::Hybrid);
        let v1 = json!({"supportedInterfaces": [], "supportsAuthenticatedExtendedCard": true});
        assert_eq!(detect(&v1), SpecVersion::V1_0);
        let v03 = json!({"url": "http://a/", "capabilities": {"extendedAgentCard": true}});
        assert_eq!(detect(&v03), SpecVersion::V0_3);
    }

    #[test]
    fn null_endpoint_counts_as_absent() {
        let card = json!({"supportedInterfaces": null, "url": "http://a/"});
        assert_eq!(detect(&card), SpecVersion::V0_3);
    }

    #[test]
    fn weaker_signals_vote_without_an_endpoint() {
        let cases = [
            (
                json!({"capabilities": {"extendedAgentCard": true}}),
                SpecVersion::V1_0,
            ),
            (json!({"securityRequirements": []}), SpecVersion::V1_0),
            (
                json!({"securitySchemes": {"k": {"apiKeySecurityScheme": {}}}}),
                SpecVersion::V1_0,
            ),
            (json!({"protocolVersion": "0.3.0"}), SpecVersion::V0_3),
            (
                json!({"supportsAuthenticatedExtendedCard": false}),
                SpecVersion::V0_3,
            ),
            (
                json!({"capabilities": {"stateTransitionHistory": true}}),
                SpecVersion::V0_3,
            ),
            (
                json!({"securitySchemes": {"k": {"type": "http"}}}),
                SpecVersion::V0_3,
            ),
            (
                json!({"securityRequirements": [], "preferredTransport": "GRPC"}),
                SpecVersion::Unknown,
            ),
            (json!({"name": "x"}), SpecVersion::Unknown),
            (json!([1, 2]), SpecVersion::Unknown),
        ];
        for (card, expected) in cases {
            assert_eq!(detect(&card), expected, "{card}");
        }
    }

    #[test]
    fn serializes_as_spec_strings() {
        let names: Vec<String> = [
            SpecVersion::V0_3,
            SpecVersion::V1_0,
            SpecVersion::Hybrid,
            SpecVersion::Unknown,
        ]
        .iter()
        .map(|version| {
            serde_json::to_value(version)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
        assert_eq!(names, ["0.3", "1.0", "hybrid", "unknown"]);
    }
}
