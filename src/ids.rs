//! Opaque, URL-safe IDs for sessions, turns and events.
//!
//! An ID is `<kind>:<prefix>_<token>`, the token being Crockford base32 of the internal keys:
//! `session:ses_` + 13 characters for the session key, `turn:turn_` / `event:evt_` + 26 characters
//! for (session key, turn ordinal) and (session key, event key). Turn ordinals never change once
//! assigned (logs only grow), so a turn ID can name its turn by position. Base32 in this alphabet sorts like the numbers it
//! encodes, so ordering by ID equals ordering by (session key, key) — the spec's final tie-break
//! is done on integers in SQL. Keys are derived from the source data at ingest, so IDs are stable.

/// Crockford's base32 alphabet: ASCII-ordered, no I, L, O or U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Longest token accepted as well-formed (spec-notes: bounded length).
const MAX_TOKEN_LEN: usize = 128;

/// An ID this service issued (or could have issued).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Id {
    Session { session: u64 },
    Turn { session: u64, turn: u64 },
    Event { session: u64, event: u64 },
}

/// Why a string is not an ID of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdError {
    /// Not of the form `<session|turn|event>:<url-safe token>`: the spec's `invalid_id`.
    Malformed,
    /// Well-formed, but no object could carry it: the spec's `not_found`.
    Unknown(IdKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Session,
    Turn,
    Event,
}

impl IdKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Turn => "turn",
            Self::Event => "event",
        }
    }
}

impl Id {
    /// Parses a caller-supplied ID.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let (kind, token) = split_well_formed(text).ok_or(IdError::Malformed)?;
        let unknown = IdError::Unknown(kind);
        match kind {
            IdKind::Session => {
                let value =
                    decode(token.strip_prefix("ses_").ok_or(unknown)?, 13).ok_or(unknown)?;
                let session = u64::try_from(value).map_err(|_| unknown)?;
                Ok(Self::Session { session })
            }
            IdKind::Turn => {
                let value =
                    decode(token.strip_prefix("turn_").ok_or(unknown)?, 26).ok_or(unknown)?;
                let (session, turn) = split_u128(value);
                Ok(Self::Turn { session, turn })
            }
            IdKind::Event => {
                let value =
                    decode(token.strip_prefix("evt_").ok_or(unknown)?, 26).ok_or(unknown)?;
                let (session, event) = split_u128(value);
                Ok(Self::Event { session, event })
            }
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Session { session } => write!(f, "session:ses_{}", encode(session as u128, 13)),
            Self::Turn { session, turn } => {
                write!(f, "turn:turn_{}", encode(join_u128(session, turn), 26))
            }
            Self::Event { session, event } => {
                write!(f, "event:evt_{}", encode(join_u128(session, event), 26))
            }
        }
    }
}

pub fn session_id(session: u64) -> String {
    Id::Session { session }.to_string()
}

pub fn turn_id(session: u64, turn: u64) -> String {
    Id::Turn { session, turn }.to_string()
}

pub fn event_id(session: u64, event: u64) -> String {
    Id::Event { session, event }.to_string()
}

/// `Some(event id)` unless the key is 0, which marks "none" in stored rows.
pub fn optional_event_id(session: u64, event: u64) -> Option<String> {
    (event != 0).then(|| event_id(session, event))
}

/// Checks the spec-notes' well-formedness rule: a kind prefix and a bounded URL-safe token.
fn split_well_formed(text: &str) -> Option<(IdKind, &str)> {
    let (prefix, token) = text.split_once(':')?;
    let kind = match prefix {
        "session" => IdKind::Session,
        "turn" => IdKind::Turn,
        "event" => IdKind::Event,
        _ => return None,
    };
    let url_safe = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if token.is_empty() || token.len() > MAX_TOKEN_LEN || !token.chars().all(url_safe) {
        return None;
    }
    Some((kind, token))
}

fn join_u128(high: u64, low: u64) -> u128 {
    ((high as u128) << 64) | low as u128
}

fn split_u128(value: u128) -> (u64, u64) {
    ((value >> 64) as u64, value as u64)
}

fn encode(mut value: u128, chars: usize) -> String {
    let mut out = vec![b'0'; chars];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(value & 31) as usize];
        value >>= 5;
    }
    String::from_utf8(out).expect("alphabet is ASCII")
}

/// Decodes exactly `chars` canonical characters; anything else (lower case, overflow) is `None`.
fn decode(token: &str, chars: usize) -> Option<u128> {
    if token.len() != chars {
        return None;
    }
    let mut value: u128 = 0;
    for byte in token.bytes() {
        let digit = ALPHABET.iter().position(|&a| a == byte)? as u128;
        value = value.checked_mul(32)?.checked_add(digit)?;
    }
    let bits = 64 * chars.div_ceil(13);
    if bits < 128 && value >> bits != 0 {
        return None;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_round_trip() {
        for id in [
            Id::Session { session: 0 },
            Id::Session { session: u64::MAX },
            Id::Turn {
                session: 42,
                turn: u64::MAX,
            },
            Id::Event {
                session: u64::MAX,
                event: 7,
            },
        ] {
            assert_eq!(Id::parse(&id.to_string()), Ok(id), "{id}");
        }
    }

    #[test]
    fn test_ids_sort_like_their_keys() {
        let mut keys: Vec<(u64, u64)> = vec![(3, 9), (3, 1), (1, u64::MAX), (u64::MAX, 0), (0, 5)];
        let mut ids: Vec<String> = keys.iter().map(|&(s, e)| event_id(s, e)).collect();
        keys.sort();
        ids.sort();
        let expected: Vec<String> = keys.iter().map(|&(s, e)| event_id(s, e)).collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn test_malformed_versus_unknown() {
        for bad in [
            "",
            "not-a-valid-id",
            "session:",
            "session:a b",
            "thread:abc",
            "event:é",
            "session",
        ] {
            assert_eq!(Id::parse(bad), Err(IdError::Malformed), "{bad:?}");
        }
        let long = format!("event:{}", "a".repeat(129));
        assert_eq!(Id::parse(&long), Err(IdError::Malformed));
        // The spec's own example of a missing object is well-formed.
        assert_eq!(
            Id::parse("event:evt_01J9DOESNOTEXIST000000000000"),
            Err(IdError::Unknown(IdKind::Event))
        );
        assert_eq!(
            Id::parse("session:ses_zzzzzzzzzzzzz"),
            Err(IdError::Unknown(IdKind::Session))
        );
        assert_eq!(
            Id::parse("session:ses_ZZZZZZZZZZZZZ"),
            Err(IdError::Unknown(IdKind::Session))
        );
        let turn_as_event = turn_id(1, 2).replace("turn:turn_", "event:evt_");
        assert!(Id::parse(&turn_as_event).is_ok());
        let event_under_turn = event_id(1, 2).replace("event:", "turn:");
        assert_eq!(
            Id::parse(&event_under_turn),
            Err(IdError::Unknown(IdKind::Turn))
        );
    }
}
