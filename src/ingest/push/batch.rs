//! The body of a batch append: one JSON line naming each log's part (harness, path, offset,
//! length, replace), then the parts' bytes one after the other. Many small logs go in one
//! request, so one write carries them all.

use serde::{Deserialize, Serialize};

use super::{Append, LogName};
use crate::vocab::Harness;

/// Most logs one batch may carry.
pub const MAX_BATCH_LOGS: usize = 1000;
/// Longest head line: the parts' descriptions.
const MAX_HEAD_BYTES: usize = 1 << 20;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    logs: Vec<PartHead>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartHead {
    harness: Harness,
    path: String,
    offset: u64,
    /// Bytes of this log in the body, after the head line and the parts before it.
    length: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    replace: bool,
    /// See [`LogName::session`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
}

/// The body carrying `appends`.
pub fn encode(appends: &[Append<'_>]) -> Vec<u8> {
    let head = Head {
        logs: appends
            .iter()
            .map(|a| PartHead {
                harness: a.log.harness,
                path: a.log.path.clone(),
                offset: a.offset,
                length: a.bytes.len() as u64,
                replace: a.replace,
                session: a.log.session.clone(),
            })
            .collect(),
    };
    let mut body = serde_json::to_vec(&head).expect("a batch head serializes");
    body.push(b'\n');
    for append in appends {
        body.extend_from_slice(append.bytes);
    }
    body
}

/// The appends a body carries, or why it is not a batch.
pub fn decode(body: &[u8]) -> Result<Vec<Append<'_>>, String> {
    let end = memchr::memchr(b'\n', &body[..body.len().min(MAX_HEAD_BYTES)]).ok_or_else(|| {
        format!("the body must start with a JSON head line of at most {MAX_HEAD_BYTES} bytes")
    })?;
    let head: Head = serde_json::from_slice(&body[..end])
        .map_err(|e| format!("the head line is not a batch head: {e}"))?;
    if head.logs.is_empty() || head.logs.len() > MAX_BATCH_LOGS {
        return Err(format!("a batch carries 1-{MAX_BATCH_LOGS} logs"));
    }
    let mut rest = &body[end + 1..];
    let mut appends = Vec::with_capacity(head.logs.len());
    for part in head.logs {
        let length = usize::try_from(part.length)
            .ok()
            .filter(|&n| n <= rest.len())
            .ok_or_else(|| {
                format!(
                    "{}: the body ends before its {} bytes",
                    part.path, part.length
                )
            })?;
        let (bytes, after) = rest.split_at(length);
        rest = after;
        appends.push(Append {
            log: LogName {
                harness: part.harness,
                path: part.path,
                session: part.session,
            },
            offset: part.offset,
            replace: part.replace,
            bytes,
        });
    }
    if !rest.is_empty() {
        return Err(format!(
            "{} bytes follow the parts the head names",
            rest.len()
        ));
    }
    Ok(appends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::push::contract::{Appended, LogRefusal, Outcome};

    fn append<'a>(path: &str, offset: u64, bytes: &'a [u8]) -> Append<'a> {
        Append {
            log: LogName {
                harness: Harness::Codex,
                path: path.into(),
                session: None,
            },
            offset,
            replace: offset == 0,
            bytes,
        }
    }

    #[test]
    fn test_a_batch_decodes_to_what_was_encoded() {
        let sent = [
            append("/a.jsonl", 0, b"{}\n{}\n"),
            append("/b.jsonl", 7, b""),
        ];
        let body = encode(&sent);
        let got = decode(&body).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].log, sent[0].log);
        assert_eq!(
            (got[0].offset, got[0].replace, got[0].bytes),
            (0, true, &b"{}\n{}\n"[..])
        );
        assert_eq!(
            (got[1].offset, got[1].replace, got[1].bytes),
            (7, false, &b""[..])
        );
    }

    #[test]
    fn test_malformed_batches_are_refused() {
        let body = encode(&[append("/a.jsonl", 0, b"abc")]);
        assert!(
            decode(&body[..body.len() - 1])
                .unwrap_err()
                .contains("ends before")
        );
        let mut longer = body;
        longer.push(b'x');
        assert!(decode(&longer).unwrap_err().contains("follow"));
        assert!(decode(b"abc").is_err());
        assert!(decode(b"{\"logs\":[]}\n").unwrap_err().contains("1-1000"));
        assert!(decode(b"{\"logs\":[],\"x\":1}\n").is_err());
    }

    #[test]
    fn test_outcomes_tell_refusals_from_appends() {
        let refused: Outcome = serde_json::from_str(
            r#"{"error":"offset_mismatch","message":"m","received":5,"generation":0}"#,
        )
        .unwrap();
        assert!(matches!(
            refused,
            Outcome::Refused(LogRefusal {
                received: Some(5),
                ..
            })
        ));
        let appended = serde_json::to_string(&Outcome::Appended(Appended::default())).unwrap();
        let back: Outcome = serde_json::from_str(&appended).unwrap();
        assert!(matches!(back, Outcome::Appended(_)));
    }
}
