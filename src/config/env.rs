//! The environment's part of the configuration: `MORAINE_MCP_<SECTION>__<KEY>` overrides, the
//! token shorthands `MORAINE_MCP_TOKEN` and `MORAINE_MCP_TEAM_TOKENS`, and every other
//! variable of the family either read by a command, explained, or refused.
//!
//! Values that hold secrets (tokens, the ClickHouse password) never appear in an error: a
//! malformed value is reported by its variable and position, and any message that could quote
//! a value has the secrets it might contain overwritten.

use std::collections::HashMap;

use super::{ConfigError, ENV_PREFIX, Settings, TokenConfig};

/// Variables of the family that are not settings: each command reads these itself.
pub const COMMAND_VARIABLES: &[&str] = &[
    "MORAINE_MCP_CONFIG",
    "MORAINE_MCP_PUSH_SERVER",
    "MORAINE_MCP_PUSH_TOKEN",
    TOKEN_VARIABLE,
    TEAM_TOKENS_VARIABLE,
];

/// A read token for MCP clients: added to `auth.tokens` as the token named [`TOKEN_NAME`].
pub const TOKEN_VARIABLE: &str = "MORAINE_MCP_TOKEN";
/// The name [`TOKEN_VARIABLE`]'s token appears under in logs and metrics.
pub const TOKEN_NAME: &str = "agents";
/// More tokens, as TOML inline tables (`{ name = "…", token = "…", scopes = ["ingest"] }`,
/// comma-separated, with or without the brackets of a list): added to `auth.tokens`.
pub const TEAM_TOKENS_VARIABLE: &str = "MORAINE_MCP_TEAM_TOKENS";

/// Variables `docker-compose.yml` reads on the host; the commands never do.
pub const COMPOSE_VARIABLES: &[&str] = &[
    "MORAINE_MCP_BIND",
    "MORAINE_MCP_PORT",
    "MORAINE_MCP_LOGS",
    "MORAINE_MCP_IMAGE",
    "MORAINE_MCP_LOG_FORMAT",
    "MORAINE_MCP_INGEST_USER",
];

/// Settings whose values are secrets.
const SECRET_SETTINGS: &[&str] = &[
    "auth.tokens",
    "auth.oauth.introspection_client_secret",
    "clickhouse.password",
];

/// Refuses a variable of the family that is neither a setting nor one a command reads (a typo
/// must not leave a server silently open, or silently without its tokens).
pub(super) fn check_variables(env: &HashMap<String, String>) -> Result<(), ConfigError> {
    let mut names: Vec<&String> = env.keys().filter(|n| n.starts_with(ENV_PREFIX)).collect();
    names.sort();
    for name in names {
        let known = name.contains("__")
            || COMMAND_VARIABLES.contains(&name.as_str())
            || COMPOSE_VARIABLES.contains(&name.as_str());
        if !known {
            return Err(ConfigError::Env {
                var: name.clone(),
                message: format!(
                    "there is no such variable: settings are {ENV_PREFIX}<SECTION>__<KEY> \
                     (config/moraine-mcp.toml lists them); {TOKEN_VARIABLE} and \
                     {TEAM_TOKENS_VARIABLE} add tokens"
                ),
            });
        }
    }
    Ok(())
}

/// What to tell the user about the family's variables that this command does not read.
pub fn notices(env: &HashMap<String, String>) -> Vec<String> {
    let mut set: Vec<&str> = COMPOSE_VARIABLES
        .iter()
        .copied()
        .filter(|name| env.contains_key(*name))
        .collect();
    set.sort_unstable();
    set.into_iter()
        .map(|name| {
            format!(
                "{name} is read by docker-compose.yml only; this command uses the settings \
                 (e.g. server.listen, {ENV_PREFIX}SERVER__LISTEN)"
            )
        })
        .collect()
}

/// Applies `MORAINE_MCP_<SECTION>__<KEY>` variables onto the parsed file.
///
/// A setting's type is taken from its default: string settings take the value verbatim (so a
/// password that looks like a number stays a string); every other setting parses it as TOML.
pub(super) fn apply_overrides(
    table: &mut toml::Table,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    let defaults = toml::Table::try_from(Settings::default())
        .map_err(|e| ConfigError::Parse(format!("cannot serialise defaults: {e}")))?;
    let mut vars: Vec<_> = env
        .iter()
        .filter(|(name, _)| name.starts_with(ENV_PREFIX) && name.contains("__"))
        .collect();
    vars.sort();
    for (var, raw) in vars {
        let path: Vec<String> = var[ENV_PREFIX.len()..]
            .split("__")
            .map(|part| part.to_ascii_lowercase())
            .collect();
        let env_error = |message: String| ConfigError::Env {
            var: var.clone(),
            message,
        };
        let default = lookup(&defaults, &path)
            .ok_or_else(|| env_error(format!("there is no setting {}", path.join("."))))?;
        let secret = SECRET_SETTINGS.contains(&path.join(".").as_str());
        let value = match default {
            toml::Value::String(_) => toml::Value::String(raw.clone()),
            _ => parse_value(raw).map_err(|e| {
                env_error(if secret {
                    format!("not a valid value: {e}")
                } else {
                    format!("{raw:?} is not a valid value: {e}")
                })
            })?,
        };
        insert(table, &path, value).map_err(env_error)?;
    }
    Ok(())
}

/// The tokens the shorthand variables add.
pub(super) fn tokens(env: &HashMap<String, String>) -> Result<Vec<TokenConfig>, ConfigError> {
    let mut tokens = Vec::new();
    if let Some(token) = env.get(TOKEN_VARIABLE).filter(|t| !t.trim().is_empty()) {
        tokens.push(TokenConfig::reader(TOKEN_NAME, token));
    }
    if let Some(team) = env
        .get(TEAM_TOKENS_VARIABLE)
        .filter(|t| !t.trim().is_empty())
    {
        let trimmed = team.trim();
        let list = if trimmed.starts_with('[') {
            trimmed.to_owned()
        } else {
            format!("[{trimmed}]")
        };
        let invalid = |message: String| ConfigError::Env {
            var: TEAM_TOKENS_VARIABLE.into(),
            message,
        };
        let value = parse_value(&list).map_err(|e| {
            invalid(format!(
                "not a list of tokens ({{ name = \"…\", token = \"…\" }}, …): {e}"
            ))
        })?;
        let team = toml::Value::try_into::<Vec<TokenConfig>>(value).map_err(|e| {
            invalid(format!(
                "not a list of tokens: {}",
                scrub(e.message(), &secret_values(team))
            ))
        })?;
        tokens.extend(team);
    }
    Ok(tokens)
}

/// Every secret the settings hold: token values and the ClickHouse password.
pub(super) fn secrets(table: &toml::Table) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(toml::Value::Array(tokens)) = table.get("auth").and_then(|a| a.get("tokens")) {
        for token in tokens {
            if let Some(toml::Value::String(value)) = token.get("token") {
                found.push(value.clone());
            }
        }
    }
    if let Some(toml::Value::String(password)) =
        table.get("clickhouse").and_then(|c| c.get("password"))
    {
        found.push(password.clone());
    }
    found
}

/// The quoted strings of a TOML text that follow a `token` or `password` key: what a message
/// about that text must never show.
pub(super) fn secret_values(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for key in ["token", "password"] {
        let mut rest = text;
        while let Some(at) = rest.find(key) {
            rest = &rest[at + key.len()..];
            let Some(value) = rest.trim_start().strip_prefix('=') else {
                continue;
            };
            let value = value.trim_start();
            let Some(quote) = value.chars().next().filter(|q| *q == '"' || *q == '\'') else {
                continue;
            };
            let body = &value[1..];
            // An unterminated value runs to the end of its line: all of it is secret.
            let end = body
                .find(quote)
                .unwrap_or_else(|| body.find('\n').unwrap_or(body.len()));
            if end > 0 {
                found.push(body[..end].to_owned());
            }
        }
    }
    found
}

/// `message` with every one of `secrets` overwritten.
pub(super) fn scrub(message: &str, secrets: &[String]) -> String {
    let mut out = message.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(secret.as_str(), "***");
    }
    out
}

/// A TOML parse error by position only: its message and line and column, never the text
/// around it (which may hold a token).
pub(super) fn parse_error(text: &str, error: &toml::de::Error) -> String {
    match error.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |at| at + 1) + 1;
            format!("{} (line {line}, column {column})", error.message())
        }
        None => error.message().to_owned(),
    }
}

fn lookup<'a>(table: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (first, rest) = path.split_first()?;
    let value = table.get(first)?;
    if rest.is_empty() {
        return Some(value);
    }
    lookup(value.as_table()?, rest)
}

fn insert(table: &mut toml::Table, path: &[String], value: toml::Value) -> Result<(), String> {
    let (first, rest) = path.split_first().ok_or("empty setting path")?;
    if rest.is_empty() {
        table.insert(first.clone(), value);
        return Ok(());
    }
    let entry = table
        .entry(first.clone())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let sub = entry
        .as_table_mut()
        .ok_or_else(|| format!("{first} is not a section"))?;
    insert(sub, rest, value)
}

/// A TOML value, its error by position within the value.
fn parse_value(raw: &str) -> Result<toml::Value, String> {
    let text = format!("v = {raw}");
    let wrapped: toml::Table = toml::from_str(&text).map_err(|e| match e.span() {
        Some(span) => format!(
            "{} (at character {})",
            e.message(),
            span.start.saturating_sub(4) + 1
        ),
        None => e.message().to_owned(),
    })?;
    wrapped
        .get("v")
        .cloned()
        .ok_or_else(|| "no value".to_owned())
}
