//! The `tokens` command: adds, rotates, revokes and lists the static tokens of a tokens file,
//! which a running server reads again within a second (no restart).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::auth::TokensFile;
use crate::config::{Config, Scope, TokenConfig};

/// Random bytes in a new token: 256 bits.
const TOKEN_BYTES: usize = 32;

#[derive(Debug, Args)]
pub struct TokensArgs {
    /// The tokens file (default: auth.tokens_file).
    #[arg(long, global = true)]
    file: Option<PathBuf>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Create a token and print it (once: the file keeps it, nothing shows it again).
    Add {
        name: String,
        /// What it may do: read (the MCP tools), ingest (push), metrics.
        #[arg(long, value_delimiter = ',', default_value = "read")]
        scopes: Vec<ScopeArg>,
        /// The source its pushes are recorded as (default: its name).
        #[arg(long)]
        source: Option<String>,
        /// The only sources it may read (default: every source).
        #[arg(long, value_delimiter = ',')]
        read_sources: Option<Vec<String>>,
    },
    /// Give a token a new value; the old one keeps working for the overlap, then expires.
    Rotate {
        name: String,
        /// How long the old value stays valid beside the new one (e.g. 30m, 24h, 7d; 0: none).
        #[arg(long, default_value = "24h", value_parser = parse_duration)]
        overlap: Duration,
    },
    /// Remove a token (and any rotated-out value of it): refused within a second.
    Revoke { name: String },
    /// The tokens: names, scopes, sources and expiry; never their values.
    List,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ScopeArg {
    Read,
    Ingest,
    Metrics,
}

impl From<ScopeArg> for Scope {
    fn from(scope: ScopeArg) -> Self {
        match scope {
            ScopeArg::Read => Self::Read,
            ScopeArg::Ingest => Self::Ingest,
            ScopeArg::Metrics => Self::Metrics,
        }
    }
}

pub fn run(args: TokensArgs, config: &Config) -> anyhow::Result<()> {
    let path = match args.file {
        Some(path) => path,
        None if !config.auth.tokens_file.is_empty() => {
            crate::config::expand_home(&config.auth.tokens_file)
        }
        None => bail!(
            "no tokens file: pass --file, or set auth.tokens_file (the server must read the \
             same file)"
        ),
    };
    let mut file = TokensFile::read(&path).map_err(anyhow::Error::msg)?;
    let now = OffsetDateTime::now_utc();
    match args.action {
        Action::List => {
            print!("{}", list(&file, now));
            return Ok(());
        }
        Action::Add {
            name,
            scopes,
            source,
            read_sources,
        } => {
            if file.tokens.iter().any(|t| t.name == name) {
                bail!("a token named {name:?} exists: rotate or revoke it");
            }
            let token = new_token()?;
            file.tokens.push(TokenConfig {
                scopes: scopes.into_iter().map(Scope::from).collect(),
                source,
                read_sources,
                ..TokenConfig::reader(&name, &token)
            });
            write(&file, &path)?;
            println!("{token}");
            eprintln!("added token {name:?} to {}", path.display());
        }
        Action::Rotate { name, overlap } => {
            let current = file
                .tokens
                .iter_mut()
                .find(|t| t.name == name && t.expires.is_none())
                .with_context(|| format!("no lasting token named {name:?}"))?;
            let mut successor = current.clone();
            successor.token = new_token()?;
            let until = now + overlap;
            current.expires = Some(until.format(&Rfc3339)?);
            file.tokens.push(successor);
            // Values past their expiry are gone for good.
            file.tokens
                .retain(|t| t.expiry().ok().flatten().is_none_or(|at| at > now));
            write(&file, &path)?;
            println!("{}", file.tokens.last().expect("pushed").token);
            eprintln!(
                "rotated token {name:?}: the old value works until {}",
                until.format(&Rfc3339)?
            );
        }
        Action::Revoke { name } => {
            let before = file.tokens.len();
            file.tokens.retain(|t| t.name != name);
            if file.tokens.len() == before {
                bail!("no token named {name:?}");
            }
            write(&file, &path)?;
            eprintln!("revoked token {name:?}: a running server refuses it within a second");
        }
    }
    Ok(())
}

fn write(file: &TokensFile, path: &Path) -> anyhow::Result<()> {
    file.write(path)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A new token: 256 random bits, hex, with a prefix that says what it is.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("mmcp_{hex}"))
}

/// One line per token: its name, scopes, sources and expiry.
fn list(file: &TokensFile, now: OffsetDateTime) -> String {
    let mut out = String::from("NAME\tSCOPES\tSOURCE\tREADS\tEXPIRES\n");
    for token in &file.tokens {
        let scopes: Vec<&str> = token.scopes.iter().map(|s| s.as_str()).collect();
        let reads = token
            .read_sources
            .as_ref()
            .map_or_else(|| "*".to_owned(), |s| s.join(","));
        let expires = match token.expiry().ok().flatten() {
            None => "never".to_owned(),
            Some(at) if at <= now => "expired".to_owned(),
            Some(_) => token.expires.clone().unwrap_or_default(),
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{reads}\t{expires}\n",
            token.name,
            scopes.join(","),
            token.ingest_source()
        ));
    }
    out
}

/// `30s`, `15m`, `24h`, `7d`, or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30m, 24h, 7d)"))?;
    let seconds = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    };
    n.checked_mul(seconds)
        .filter(|s| *s <= 366 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is longer than a year"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_durations_and_new_tokens() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("2y").is_err() && parse_duration("400d").is_err());
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 5 + 2 * TOKEN_BYTES);
    }
}
