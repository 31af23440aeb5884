//! Meaning beside words: each session's prose as one vector of a static embedding model, so
//! that a global search ranks higher a session asked about in other words than it used.
//!
//! The model (WordLlama's 256-dimension token table and its tokenizer) gives a text the sum of
//! its tokens' vectors. That sum grows event by event as ingest reads a session, and a
//! question's costs one table lookup per token: no inference at ingest or query time. Ranked
//! alone it misses what words find (an error fragment, a flag); fused with BM25 by reciprocal
//! rank it lifts questions in other words and keeps identifier questions first
//! (docs/performance.md).

mod fetch;
mod model;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use model::{DIM, Embedder, unit};

use crate::config::SemanticConfig;

#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    #[error(
        "cannot fetch the embedding model: {0} (or set semantic.enabled = false to rank by words \
         alone)"
    )]
    Fetch(String),
    #[error("cannot read the embedding model: {0}")]
    Model(String),
}

/// Models loaded in this process, by directory: loaded once, shared by ingest and every search.
static LOADED: Mutex<Vec<(PathBuf, Arc<Embedder>)>> = Mutex::new(Vec::new());

/// The model `config` names, fetched on first use and loaded once per process; `None` when
/// semantic ranking is off. Every command that ingests or serves calls it before it starts, so
/// [`loaded`] finds the model afterwards.
pub async fn ensure(config: &SemanticConfig) -> Result<Option<Arc<Embedder>>, SemanticError> {
    if !config.enabled {
        return Ok(None);
    }
    if let Some(embedder) = loaded(config) {
        return Ok(Some(embedder));
    }
    let dir = config.model_dir_path();
    let embedder = match fetch_and_load(&dir).await {
        // Files that were there but cannot be read (damaged on disk) are fetched once more.
        Err(SemanticError::Model(why)) => {
            tracing::warn!(%why, dir = %dir.display(), "fetching the embedding model again");
            fetch::forget(&dir);
            fetch_and_load(&dir).await?
        }
        loaded => loaded?,
    };
    let mut models = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, known)) = models.iter().find(|(d, _)| *d == dir) {
        return Ok(Some(known.clone()));
    }
    let embedder = Arc::new(embedder);
    models.push((dir, embedder.clone()));
    Ok(Some(embedder))
}

async fn fetch_and_load(dir: &std::path::Path) -> Result<Embedder, SemanticError> {
    fetch::ensure(dir).await?;
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || Embedder::load(&dir))
        .await
        .map_err(|e| SemanticError::Model(e.to_string()))?
}

/// The model `config` names if [`ensure`] loaded it in this process (`None` when semantic
/// ranking is off, or before `ensure`).
pub fn loaded(config: &SemanticConfig) -> Option<Arc<Embedder>> {
    if !config.enabled {
        return None;
    }
    let dir = config.model_dir_path();
    LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(d, _)| *d == dir)
        .map(|(_, embedder)| embedder.clone())
}
