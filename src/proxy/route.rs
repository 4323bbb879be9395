//! Which agent a request is for, and whether the gateway answers it itself.

/// A request path under `/agents/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentPath<'a> {
    pub agent: &'a str,
    /// Everything after `/agents/{id}`: empty or starting with `/`; query not included.
    pub rest: &'a str,
}

/// Split `/agents/{id}/rest` (path only, no query).
pub fn agent_path(path: &str) -> Option<AgentPath<'_>> {
    let after = path.strip_prefix("/agents/")?;
    let end = after.find('/').unwrap_or(after.len());
    let agent = &after[..end];
    if agent.is_empty() {
        return None;
    }
    Some(AgentPath {
        agent,
        rest: &after[end..],
    })
}

/// The public card paths the gateway serves from its cache.
pub fn is_card_path(rest: &str) -> bool {
    matches!(
        rest,
        "/.well-known/agent-card.json" | "/.well-known/agent.json"
    )
}

/// REST paths that return an (extended) agent card, whose URLs need rewriting:
/// v0.3 `GET /v1/card`, v1.0 `GET /extendedAgentCard` (optionally under a tenant).
pub fn is_rest_extended_card(method: &str, upstream_path: &str) -> bool {
    let path = upstream_path.split('?').next().unwrap_or("");
    method == "GET" && (path.ends_with("/v1/card") || path.ends_with("/extendedAgentCard"))
}

/// JSON-RPC methods that return an (extended) agent card.
pub fn is_rpc_extended_card(method: &str) -> bool {
    matches!(
        method,
        "agent/getAuthenticatedExtendedCard" | "GetExtendedAgentCard"
    )
}

/// Whether a POST body is a REST message (`message.parts` at the top) rather than JSON-RPC.
pub fn is_rest_message(upstream_path: &str) -> bool {
    let path = upstream_path.split('?').next().unwrap_or("");
    path.ends_with("/message:send") || path.ends_with("/message:stream")
}

/// A bounded metrics label for the A2A operation: v1.0 names for both versions.
pub fn method_label(
    rpc_method: Option<&str>,
    http_method: &str,
    upstream_path: &str,
) -> &'static str {
    if let Some(m) = rpc_method {
        return match m {
            "SendMessage" | "message/send" => "SendMessage",
            "SendStreamingMessage" | "message/stream" => "SendStreamingMessage",
            "GetTask" | "tasks/get" => "GetTask",
            "ListTasks" | "tasks/list" => "ListTasks",
            "CancelTask" | "tasks/cancel" => "CancelTask",
            "SubscribeToTask" | "tasks/resubscribe" => "SubscribeToTask",
            "CreateTaskPushNotificationConfig" | "tasks/pushNotificationConfig/set" => {
                "CreateTaskPushNotificationConfig"
            }
            "GetTaskPushNotificationConfig" | "tasks/pushNotificationConfig/get" => {
                "GetTaskPushNotificationConfig"
            }
            "ListTaskPushNotificationConfigs" | "tasks/pushNotificationConfig/list" => {
                "ListTaskPushNotificationConfigs"
            }
            "DeleteTaskPushNotificationConfig" | "tasks/pushNotificationConfig/delete" => {
                "DeleteTaskPushNotificationConfig"
            }
            "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard" => "GetExtendedAgentCard",
            _ => "other",
        };
    }
    let path = upstream_path.split('?').next().unwrap_or("");
    let last = path.rsplit('/').next().unwrap_or("");
    match (http_method, last) {
        ("POST", "message:send") => "SendMessage",
        ("POST", "message:stream") => "SendStreamingMessage",
        (_, l) if l.ends_with(":cancel") => "CancelTask",
        (_, l) if l.ends_with(":subscribe") => "SubscribeToTask",
        ("GET", "card") | ("GET", "extendedAgentCard") => "GetExtendedAgentCard",
        ("GET", "tasks") => "ListTasks",
        _ if path.contains("/pushNotificationConfigs") => "PushNotificationConfig",
        ("GET", _) if path.contains("/tasks/") => "GetTask",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_agent_paths() {
        assert_eq!(
            agent_path("/agents/demo/rest/x"),
            Some(AgentPath {
                agent: "demo",
                rest: "/rest/x"
            })
        );
        assert_eq!(
            agent_path("/agents/demo"),
            Some(AgentPath {
                agent: "demo",
                rest: ""
            })
        );
        assert_eq!(agent_path("/agents/"), None);
        assert_eq!(agent_path("/other"), None);
    }

    #[test]
    fn labels_are_bounded() {
        assert_eq!(
            method_label(Some("message/send"), "POST", "/"),
            "SendMessage"
        );
        assert_eq!(method_label(Some("made/up"), "POST", "/"), "other");
        assert_eq!(
            method_label(None, "POST", "/rest/message:stream"),
            "SendStreamingMessage"
        );
        assert_eq!(method_label(None, "GET", "/v1/tasks/abc"), "GetTask");
        assert_eq!(
            method_label(None, "POST", "/v1/tasks/abc:cancel"),
            "CancelTask"
        );
    }
}
