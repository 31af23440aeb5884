//! `list_sessions` cursors: where the previous page ended, signed with HMAC-SHA256 under a key
//! kept in ClickHouse, and bound to the window's instants, the filters and the sort.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::wire::ListRequest;
use crate::tools::context::Visibility;
use crate::tools::envelope::ToolError;
use crate::tools::project::ProjectMatch;

/// Where the previous page ended, signed so it cannot be forged or reused with other filters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct CursorBody {
    /// Version of this format.
    pub v: u8,
    /// Fingerprint of the window, filters and sort the cursor belongs to.
    pub f: String,
    /// updated_at (ms) and session key of the last session returned.
    pub t: i64,
    pub k: u64,
    /// Sessions returned so far (ranks continue from here).
    pub n: u32,
}

/// Binds a cursor to the instants (not the spelling) of the window, to filters and sort, and
/// to what the caller may see (so a cursor tells nothing to another token).
pub(super) fn fingerprint(
    request: &ListRequest,
    visible: &Visibility,
    start: i64,
    end: i64,
) -> String {
    let mut canonical = serde_json::json!([
        start,
        end,
        request.mode,
        request.sort,
        request.harness,
        request.source
    ]);
    let items = canonical.as_array_mut().expect("an array");
    // Added only when given, so cursors of requests without it keep their fingerprint; by what
    // it matches, so spellings of one filter (a trailing slash) share cursors.
    if request.project.is_some() {
        let project = ProjectMatch::of(request.project.as_deref());
        items.push(serde_json::json!({"project": project}));
    }
    if let Visibility::Sources(sources) = visible {
        let mut sources = sources.to_vec();
        sources.sort();
        items.push(serde_json::json!(sources));
    }
    let digest = <Sha256 as sha2::Digest>::digest(canonical.to_string().as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..12])
}

pub(super) fn sign(key: &[u8], body: &CursorBody) -> String {
    signed(key, &serde_json::to_vec(body).expect("cursor serialises"))
}

/// `payload` encoded and signed with `key`, as a cursor token.
fn signed(key: &[u8], payload: &[u8]) -> String {
    let payload = URL_SAFE_NO_PAD.encode(payload);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(payload.as_bytes());
    let tag = URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..16]);
    format!("{payload}.{tag}")
}

/// Checks `data` as a token from a client, and as the body of a token this server signed
/// (so that fuzzing reaches the body's decoding past the signature).
pub(crate) fn check_untrusted(data: &[u8]) {
    let key = b"fuzzing key";
    if let Ok(token) = std::str::from_utf8(data) {
        let _ = verify(key, token, "fingerprint");
    }
    let _ = verify(key, &signed(key, data), "fingerprint");
}

pub(super) fn verify(key: &[u8], token: &str, fingerprint: &str) -> Result<CursorBody, ToolError> {
    let invalid = || {
        ToolError::invalid(
            "cursor",
            "cursor is not a next_cursor issued by this server",
        )
    };
    let (payload, tag) = token.split_once('.').ok_or_else(invalid)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(payload.as_bytes());
    mac.verify_truncated_left(&tag).map_err(|_| invalid())?;
    let body: CursorBody = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(invalid)?;
    if body.v != 1 {
        return Err(invalid());
    }
    if body.f != fingerprint {
        return Err(ToolError::invalid(
            "cursor",
            "cursor belongs to a request with a different window, filter or sort",
        ));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::rfc3339_ms;
    use crate::tools::list::wire::SortOrder;

    fn body() -> CursorBody {
        CursorBody {
            v: 1,
            f: "abc".into(),
            t: 5,
            k: 7,
            n: 20,
        }
    }

    #[test]
    fn test_cursor_round_trip_and_tamper_evidence() {
        let token = sign(b"key", &body());
        assert_eq!(verify(b"key", &token, "abc").unwrap(), body());
        assert!(verify(b"other", &token, "abc").is_err());
        assert!(
            verify(b"key", &token, "xyz")
                .unwrap_err()
                .to_string()
                .contains("different")
        );
        let (payload, tag) = token.split_once('.').unwrap();
        let mut forged = body();
        forged.n = 0;
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert!(verify(b"key", &format!("{forged_payload}.{tag}"), "abc").is_err());
        assert!(verify(b"key", payload, "abc").is_err());
        assert!(verify(b"key", "garbage", "abc").is_err());
    }

    #[test]
    fn test_fingerprint_uses_instants_not_spelling() {
        let mut request = ListRequest {
            start_datetime: "2026-04-30T09:00:00-04:00".into(),
            end_datetime: "2026-04-30T13:00:00Z".into(),
            limit: 20,
            cursor: None,
            mode: None,
            sort: SortOrder::Desc,
            harness: None,
            source: None,
            project: None,
        };
        let start = rfc3339_ms(&request.start_datetime).unwrap();
        let end = rfc3339_ms(&request.end_datetime).unwrap();
        let all = Visibility::All;
        let f1 = fingerprint(&request, &all, start, end);
        request.start_datetime = "2026-04-30T13:00:00Z".into();
        let start2 = rfc3339_ms(&request.start_datetime).unwrap();
        assert_eq!(start, start2);
        assert_eq!(f1, fingerprint(&request, &all, start2, end));
        let limited = Visibility::Sources(std::sync::Arc::from(vec!["a".to_owned()]));
        assert_ne!(f1, fingerprint(&request, &limited, start2, end));
        request.sort = SortOrder::Asc;
        assert_ne!(f1, fingerprint(&request, &all, start2, end));
        // A project filter binds the cursor by what it matches, not by its spelling.
        let f2 = fingerprint(&request, &all, start2, end);
        request.project = Some("/home/dev/src/tidepool".into());
        let f3 = fingerprint(&request, &all, start2, end);
        assert_ne!(f2, f3);
        request.project = Some("/home/dev/src/tidepool/".into());
        assert_eq!(f3, fingerprint(&request, &all, start2, end));
        request.project = Some("tidepool".into());
        assert_ne!(f3, fingerprint(&request, &all, start2, end));
    }
}
