//! A person's rights from the claims of their access token: the configured rules grant the
//! `read`/`ingest` scopes and limit the sources they read; a chosen claim names them.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Caller, Method};
use crate::config::{OAuthRule, Scope, is_source_name};

/// Longest name kept for a person (a source name's bound).
const MAX_NAME_CHARS: usize = 128;
/// The name of a person whose access token gives none: it may read, never push (every such
/// token would write as one source).
pub(crate) const UNNAMED: &str = "oauth";

/// The rules in force and the claim that names a person.
#[derive(Debug)]
pub(crate) struct Rules {
    rules: Vec<OAuthRule>,
    name_claim: String,
}

impl Rules {
    pub(crate) fn new(rules: Vec<OAuthRule>, name_claim: &str) -> Self {
        Self {
            rules,
            name_claim: name_claim.to_owned(),
        }
    }

    /// The caller the claims describe: the union of what every matching rule grants; reading
    /// limited to the sources the matching rules name, unless one names `*` or none names any.
    pub(crate) fn caller(&self, claims: &Map<String, Value>) -> Caller {
        let mut scopes = Vec::new();
        let mut sources: Option<Vec<String>> = None;
        let mut every_source = false;
        for rule in self.rules.iter().filter(|r| matches(claims, r)) {
            for scope in &rule.scopes {
                if !scopes.contains(scope) {
                    scopes.push(*scope);
                }
            }
            if let Some(named) = &rule.read_sources {
                every_source |= named.iter().any(|s| s == "*");
                let list = sources.get_or_insert_with(Vec::new);
                list.extend(
                    named
                        .iter()
                        .filter(|s| *s != "*" && !list.contains(s))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
            }
        }
        let name = self.name(claims);
        Caller {
            ingest_source: Some(name.clone()),
            name,
            method: Method::OAuth,
            scopes,
            read_sources: if every_source {
                None
            } else {
                sources.map(Arc::from)
            },
        }
    }

    /// The person's name: the configured claim, else `sub`, bounded and printable.
    fn name(&self, claims: &Map<String, Value>) -> String {
        let named = [self.name_claim.as_str(), "sub"]
            .into_iter()
            .find_map(|claim| claim_value(claims, claim)?.as_str().map(str::to_owned))
            .unwrap_or_default();
        let name: String = named
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_NAME_CHARS)
            .collect();
        if is_source_name(&name) {
            name
        } else {
            UNNAMED.to_owned()
        }
    }
}

/// Whether the claim the rule names holds its value: equal to a string (a space-separated
/// list for `scope` and `scp`, RFC 8693 §4.2), or to an element of an array.
fn matches(claims: &Map<String, Value>, rule: &OAuthRule) -> bool {
    let Some(value) = claim_value(claims, &rule.claim) else {
        return false;
    };
    let wanted = rule.value.as_str();
    let list = matches!(rule.claim.as_str(), "scope" | "scp");
    let one = |v: &Value| match v {
        Value::String(s) if list => s.split_whitespace().any(|s| wanted == "*" || s == wanted),
        Value::String(s) => wanted == "*" || s == wanted,
        Value::Bool(_) | Value::Number(_) => {
            wanted == "*" || serde_json::from_str::<Value>(wanted).is_ok_and(|w| &w == v)
        }
        _ => false,
    };
    match value {
        Value::Array(items) => items.iter().any(one),
        other => one(other),
    }
}

/// The claim called `name`, or found by following its dots into nested objects
/// (`realm_access.roles`); a name that is itself a claim wins (`https://example.com/groups`).
fn claim_value<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// The scopes a request needs, as a challenge names them.
pub(crate) fn scope_list(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(claim: &str, value: &str, scopes: &[Scope], sources: Option<&[&str]>) -> OAuthRule {
        OAuthRule {
            claim: claim.into(),
            value: value.into(),
            scopes: scopes.to_vec(),
            read_sources: sources.map(|s| s.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn test_rules_grant_scopes_and_limit_sources_by_claims() {
        let rules = Rules::new(
            vec![
                rule("scope", "read", &[Scope::Read], None),
                rule("groups", "team-a", &[], Some(&["laptop-a"])),
                rule("realm_access.roles", "admin", &[], Some(&["*"])),
                rule(
                    "https://example.com/groups",
                    "ci",
                    &[Scope::Ingest],
                    Some(&["ci"]),
                ),
            ],
            "email",
        );
        let alice = rules.caller(&claims(json!({
            "sub": "u1", "email": "alice@example.com", "scope": "openid read", "groups": ["team-a"]
        })));
        assert_eq!(alice.name, "alice@example.com");
        assert!(alice.may(Scope::Read) && !alice.may(Scope::Ingest));
        assert_eq!(
            alice.read_sources.as_deref(),
            Some(&["laptop-a".to_owned()][..])
        );
        let admin = rules.caller(&claims(json!({
            "sub": "u2", "scope": "read", "groups": ["team-a"], "realm_access": {"roles": ["admin"]}
        })));
        assert_eq!(admin.name, "u2");
        assert_eq!(admin.read_sources, None);
        let bot = rules.caller(&claims(json!({
            "sub": "u3", "scope": "reader", "https://example.com/groups": "ci"
        })));
        assert!(!bot.may(Scope::Read) && bot.may(Scope::Ingest));
        assert_eq!(bot.read_sources.as_deref(), Some(&["ci".to_owned()][..]));
        let nobody = rules.caller(&claims(json!({"sub": "\u{7}"})));
        assert!(!nobody.may(Scope::Read));
        assert_eq!(nobody.name, "oauth");
    }
}
