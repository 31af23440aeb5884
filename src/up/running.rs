//! The record a running `up` keeps in its data directory (`up.json`): which process it is and
//! where its engine and server listen, so that a second `up` says plainly what is wrong and the
//! commands run beside it (`ingest`, `migrate`, `reindex`, `serve --stdio`, `healthcheck`) find
//! it by themselves.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A running `up`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Running {
    pub pid: u32,
    /// The embedded ClickHouse's HTTP URL.
    pub engine_url: String,
    /// Where its MCP server listens (absent in records of older versions).
    #[serde(default)]
    pub listen: Option<SocketAddr>,
}

impl Running {
    fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("up.json")
    }

    /// The `up` recorded in `data_dir`, if that process is still running (a record left by an
    /// `up` that was killed is ignored).
    pub(crate) fn find(data_dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(Self::path(data_dir)).ok()?;
        let running: Self = serde_json::from_str(&text).ok()?;
        (running.pid != std::process::id() && is_moraine_process(running.pid)).then_some(running)
    }

    /// Records this process as the running `up` of `data_dir`.
    pub(crate) fn record(
        data_dir: &Path,
        engine_url: &str,
        listen: SocketAddr,
    ) -> std::io::Result<Self> {
        let running = Self {
            pid: std::process::id(),
            engine_url: engine_url.to_owned(),
            listen: Some(listen),
        };
        let text = serde_json::to_string_pretty(&running).map_err(std::io::Error::other)?;
        // Written whole, then renamed: a reader never sees half a record.
        let partial = data_dir.join("up.json.partial");
        std::fs::write(&partial, text)?;
        std::fs::rename(&partial, Self::path(data_dir))?;
        Ok(running)
    }

    /// Removes the record, if it is this process's.
    pub(crate) fn clear(data_dir: &Path) {
        let path = Self::path(data_dir);
        let ours = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str::<Self>(&text).ok())
            .is_some_and(|r| r.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether `pid` is a live moraine-mcp process (not a reused pid of something else).
#[cfg(target_os = "linux")]
fn is_moraine_process(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| cmdline.windows(7).any(|w| w == b"moraine"))
}

/// Whether `pid` is a live process (`kill -0`; other systems have no /proc to check its name).
#[cfg(not(target_os = "linux"))]
fn is_moraine_process(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_record_of_a_dead_process_is_ignored_and_this_ones_is_cleared() {
        let dir = std::env::temp_dir().join(format!("moraine-running-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // This process records itself: `find` never answers with the asking process.
        Running::record(&dir, "http://127.0.0.1:1", ([127, 0, 0, 1], 3).into()).unwrap();
        assert_eq!(Running::find(&dir), None);
        Running::clear(&dir);
        assert!(!dir.join("up.json").exists());
        // A record of a process that is gone.
        let gone = Running {
            pid: u32::MAX - 1,
            engine_url: "http://127.0.0.1:2".into(),
            listen: None,
        };
        std::fs::write(dir.join("up.json"), serde_json::to_string(&gone).unwrap()).unwrap();
        assert_eq!(Running::find(&dir), None);
        // Another process's record is not cleared.
        Running::clear(&dir);
        assert!(dir.join("up.json").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
