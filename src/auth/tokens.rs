//! Static bearer tokens: the configured ones and a tokens file read again while the server
//! runs (on change, or SIGHUP), compared in constant time, each honoured until it expires.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

use super::{Caller, Method};
use crate::config::{TokenConfig, validate_tokens};

/// How often the tokens file is looked at: a revoked token is refused within this time.
pub(crate) const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A tokens file: `[[tokens]]` tables, as in `auth.tokens`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TokensFile {
    #[serde(default)]
    pub(crate) tokens: Vec<TokenConfig>,
}

impl TokensFile {
    /// The file at `path`; a missing file holds no tokens.
    pub(crate) fn read(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        // The parser's message can quote a line, and a line can hold a secret: only its place.
        let file: Self = toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|span| text[..span.start].lines().count().max(1))
                .unwrap_or(0);
            format!("{} is not a tokens file (line {at})", path.display())
        })?;
        validate_tokens(&file.tokens).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(file)
    }

    /// Writes the file whole, readable by its owner only, replacing the old one at once so a
    /// running server never reads half of it.
    pub(crate) fn write(&self, path: &Path) -> anyhow::Result<()> {
        use std::io::Write as _;
        validate_tokens(&self.tokens).map_err(anyhow::Error::msg)?;
        let text = format!(
            "# moraine-mcp tokens, managed by `moraine-mcp tokens`; a running server reads \
             changes within a second.\n{}",
            toml::to_string(self)?
        );
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let temp = dir.join(format!(
            ".{}.{}",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("tokens"),
            std::process::id()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        Ok(())
    }
}

#[derive(Debug)]
struct Token {
    digest: [u8; 32],
    caller: Caller,
    expires: Option<OffsetDateTime>,
}

/// One set of accepted tokens, stored as SHA-256 digests so every comparison takes the same
/// time.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    tokens: Vec<Token>,
}

impl Tokens {
    pub(crate) fn new(tokens: &[TokenConfig]) -> Self {
        Self {
            tokens: tokens
                .iter()
                .map(|t| Token {
                    digest: digest(t.token.trim()),
                    caller: Caller {
                        name: t.name.clone(),
                        method: Method::Static,
                        scopes: t.scopes.clone(),
                        ingest_source: Some(t.ingest_source().to_owned()),
                        read_sources: t.read_sources.as_deref().map(Arc::from),
                    },
                    // Validated: an unreadable date never reaches here.
                    expires: t.expiry().ok().flatten(),
                })
                .collect(),
        }
    }

    /// The caller the presented token names, comparing against every token in constant time;
    /// an expired token names no one.
    pub(crate) fn check(&self, presented: &str) -> Option<&Caller> {
        let digest = digest(presented);
        let now = OffsetDateTime::now_utc();
        let mut found = None;
        for token in &self.tokens {
            if bool::from(digest.ct_eq(&token.digest)) && token.expires.is_none_or(|at| now < at) {
                found = Some(&token.caller);
            }
        }
        found
    }

    /// Whether a token pushes as `source`.
    pub(crate) fn writes_as(&self, source: &str) -> bool {
        self.tokens
            .iter()
            .any(|t| t.caller.ingest_source.as_deref() == Some(source))
    }

    /// Each token's name, and whether its ingest source is that name.
    fn names(&self) -> impl Iterator<Item = (String, bool)> + '_ {
        self.tokens.iter().map(|t| {
            let own = t.caller.ingest_source.as_deref() == Some(t.caller.name.as_str());
            (t.caller.name.clone(), own)
        })
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The tokens in force: the configuration's, and the tokens file's as last read.
#[derive(Debug)]
pub(crate) struct TokenStore {
    configured: Vec<TokenConfig>,
    file: Option<PathBuf>,
    current: RwLock<Arc<Tokens>>,
    /// The file's modification time and length when last read.
    stamp: RwLock<Option<(SystemTime, u64)>>,
}

impl TokenStore {
    /// The configured tokens and, when `file` is set, the file's; an unreadable or invalid file
    /// fails the start.
    pub(crate) fn new(configured: &[TokenConfig], file: Option<PathBuf>) -> Result<Self, String> {
        let store = Self {
            configured: configured.to_vec(),
            file,
            current: RwLock::new(Arc::new(Tokens::new(configured))),
            stamp: RwLock::new(None),
        };
        store.reload()?;
        Ok(store)
    }

    /// The tokens in force now.
    pub(crate) fn current(&self) -> Arc<Tokens> {
        self.current.read().expect("tokens lock").clone()
    }

    /// No static tokens are asked for at all (no configured ones, no file).
    pub(crate) fn is_unused(&self) -> bool {
        self.configured.is_empty() && self.file.is_none()
    }

    /// Each current token's name, and whether its ingest source is that name.
    pub(crate) fn names(&self) -> Vec<(String, bool)> {
        self.current().names().collect()
    }

    /// Reads the tokens file again and puts its tokens in force; on an error the tokens in
    /// force stay as they were. Returns whether anything was read.
    pub(crate) fn reload(&self) -> Result<bool, String> {
        let Some(path) = &self.file else {
            return Ok(false);
        };
        let stamp = file_stamp(path);
        let file = TokensFile::read(path)?;
        let mut all = self.configured.clone();
        all.extend(file.tokens);
        validate_tokens(&all).map_err(|e| format!("{} with auth.tokens: {e}", path.display()))?;
        *self.current.write().expect("tokens lock") = Arc::new(Tokens::new(&all));
        *self.stamp.write().expect("tokens lock") = stamp;
        Ok(true)
    }

    /// Reads the file again when it changed since last read.
    fn reload_if_changed(&self) {
        let Some(path) = &self.file else { return };
        if file_stamp(path) == *self.stamp.read().expect("tokens lock") {
            return;
        }
        self.reload_logged("changed");
    }

    fn reload_logged(&self, why: &str) {
        match self.reload() {
            Ok(_) => tracing::info!(
                tokens = self.current().tokens.len(),
                "tokens file {why}: read again"
            ),
            Err(error) => {
                // Read again only when it changes once more: one error line per edit.
                if let Some(path) = &self.file {
                    *self.stamp.write().expect("tokens lock") = file_stamp(path);
                }
                tracing::error!(%error, "tokens file {why} but not read; the tokens in force stay");
            }
        }
    }

    /// Keeps the tokens file's tokens in force while `shutdown` is not cancelled: looked at
    /// every [`WATCH_EVERY`], and read at once on SIGHUP.
    pub(crate) fn watch(self: Arc<Self>, shutdown: CancellationToken) {
        if self.file.is_none() {
            return;
        }
        tokio::spawn(async move {
            let mut hangup = hangups();
            let mut tick = tokio::time::interval(WATCH_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = tick.tick() => self.reload_if_changed(),
                    Some(()) = next_hangup(&mut hangup) => self.reload_logged("signalled (SIGHUP)"),
                }
            }
        });
    }
}

fn file_stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = ();

#[cfg(unix)]
fn hangups() -> Hangups {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(unix)]
async fn next_hangup(hangups: &mut Hangups) -> Option<()> {
    match hangups {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
fn hangups() -> Hangups {}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangups) -> Option<()> {
    std::future::pending().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scope;

    #[test]
    fn test_check_names_the_caller_with_its_scopes_and_sources() {
        let mut ingest = TokenConfig::reader("laptop", " 0123456789abcdef ");
        ingest.scopes = vec![Scope::Ingest];
        ingest.source = Some("alice".into());
        let mut limited = TokenConfig::reader("ci", "fedcba9876543210");
        limited.read_sources = Some(vec!["ci".into()]);
        let tokens = Tokens::new(&[ingest, limited]);
        let laptop = tokens.check("0123456789abcdef").unwrap();
        assert_eq!(laptop.name, "laptop");
        assert!(laptop.may(Scope::Ingest) && !laptop.may(Scope::Read));
        assert_eq!(laptop.ingest_source.as_deref(), Some("alice"));
        let ci = tokens.check("fedcba9876543210").unwrap();
        assert!(ci.may(Scope::Read) && !ci.may(Scope::Ingest));
        assert_eq!(ci.read_sources.as_deref(), Some(&["ci".to_owned()][..]));
        assert_eq!(ci.ingest_source.as_deref(), Some("ci"));
        assert!(tokens.check("0123456789abcdeF").is_none());
        assert!(Caller::anonymous().may(Scope::Ingest));
    }

    #[test]
    fn test_an_expired_token_names_no_one_and_its_successor_does() {
        let mut old = TokenConfig::reader("ci", "old-0123456789abcdef");
        old.expires = Some("2001-01-01T00:00:00Z".into());
        let mut overlapping = TokenConfig::reader("ci", "mid-0123456789abcdef");
        overlapping.expires = Some("2999-01-01T00:00:00Z".into());
        let new = TokenConfig::reader("ci", "new-0123456789abcdef");
        let tokens = Tokens::new(&[old, overlapping, new]);
        assert!(tokens.check("old-0123456789abcdef").is_none());
        assert_eq!(tokens.check("mid-0123456789abcdef").unwrap().name, "ci");
        assert_eq!(tokens.check("new-0123456789abcdef").unwrap().name, "ci");
    }

    #[test]
    fn test_a_tokens_file_is_read_again_and_a_broken_one_changes_nothing() {
        let dir = std::env::temp_dir().join(format!("moraine-tokens-{}", std::process::id()));
        let path = dir.join("tokens.toml");
        let _ = std::fs::remove_dir_all(&dir);
        let store = TokenStore::new(&[], Some(path.clone())).unwrap();
        assert!(store.current().check("laptop-0123456789abcdef").is_none());
        TokensFile {
            tokens: vec![TokenConfig::reader("laptop", "laptop-0123456789abcdef")],
        }
        .write(&path)
        .unwrap();
        assert!(store.reload().unwrap());
        assert!(store.current().check("laptop-0123456789abcdef").is_some());
        std::fs::write(
            &path,
            "[[tokens]]\nname = \"x\"\ntoken = \"not-closed-0123456789\n",
        )
        .unwrap();
        let error = store.reload().unwrap_err();
        assert!(!error.contains("not-closed"), "{error}");
        assert!(store.current().check("laptop-0123456789abcdef").is_some());
        std::fs::remove_file(&path).unwrap();
        store.reload().unwrap();
        assert!(store.current().check("laptop-0123456789abcdef").is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
