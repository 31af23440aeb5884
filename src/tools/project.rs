//! Projects: the repository a session worked in, named from the working directory its log
//! records (`sessions.cwd`), and the `project` filter of `search_sessions` and `list_sessions`.
//!
//! A filter holding `/` or `\` is a path: it matches sessions whose working directory is that
//! path or lies under it. Anything else is a name: it matches sessions whose working
//! directory's last component is exactly that. Either way, backslashes count as `/` and
//! trailing separators are ignored, on both sides.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// Longest accepted `project` filter (a path can be long).
pub(crate) const MAX_PROJECT_CHARS: u64 = 1024;

/// The project of a session, on the wire: `null` where its log records no working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Project {
    /// The working directory's last component (what a `project` filter by name matches).
    pub name: String,
    /// The working directory, as the log records it.
    pub path: String,
}

impl Project {
    /// The project of a session whose log records `cwd`; `None` when it records none.
    pub(crate) fn of(cwd: &str) -> Option<Self> {
        if cwd.is_empty() {
            return None;
        }
        let normalised = normalise(cwd);
        let last = normalised.rsplit('/').next().unwrap_or_default();
        // Only a root (`/`) has no last component: it names itself.
        let name = if last.is_empty() { cwd } else { last };
        Some(Self {
            name: name.to_owned(),
            path: cwd.to_owned(),
        })
    }
}

/// Backslashes as `/`, trailing separators dropped (what [`project_condition!`] does in SQL).
fn normalise(path: &str) -> String {
    path.replace('\\', "/").trim_end_matches('/').to_owned()
}

/// The published schema of the `project` filter.
pub(crate) fn filter_schema() -> Value {
    json!({
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": MAX_PROJECT_CHARS,
        "description": "Only sessions of this project. A name (no / or \\) matches sessions whose \
    working directory's last component is exactly it (case-sensitive), e.g. \"moraine-mcp\"; a path \
    matches sessions whose working directory is that path or lies under it, e.g. \"/home/me/src/moraine-mcp\".",
    })
}

/// The message for a `project` filter that breaks its schema.
pub(crate) fn filter_message() -> String {
    format!("project must be a non-empty string of at most {MAX_PROJECT_CHARS} characters")
}

/// A `project` filter as the statements' parameters: a session matches when its normalised
/// working directory `d` has `d + "/"` starting with `prefix` and `"/" + d` ending with
/// `suffix`. A path `p` is the prefix `p/` (the directory or under it); a name `n` is the
/// suffix `/n` (the last component).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub(crate) struct ProjectMatch {
    pub prefix: String,
    pub suffix: String,
}

impl ProjectMatch {
    /// The parameters of filter `value` (`None`: no filter; the parameters are then unused).
    pub(crate) fn of(value: Option<&str>) -> Self {
        match value {
            None => Self::default(),
            Some(path) if path.contains(['/', '\\']) => Self {
                prefix: format!("{}/", normalise(path)),
                suffix: String::new(),
            },
            Some(name) => Self {
                prefix: String::new(),
                suffix: format!("/{name}"),
            },
        }
    }
}

/// The condition on a `sessions` row that keeps a project's sessions, with the parameters of
/// [`ProjectMatch`]: a macro (expanding to a string literal), so that statements `concat!` it
/// into their fixed fragments. `char(92)` is a backslash.
macro_rules! project_condition {
    () => {
        "cwd != '' \
         AND startsWith(concat(trim(TRAILING '/' FROM replaceAll(cwd, char(92), '/')), '/'), {project_prefix:String}) \
         AND endsWith(concat('/', trim(TRAILING '/' FROM replaceAll(cwd, char(92), '/'))), {project_suffix:String})"
    };
}
pub(crate) use project_condition;

#[cfg(test)]
mod tests {
    use super::*;

    /// What the SQL condition decides, in Rust: the reference the integration tests hold the
    /// statements to.
    fn matches(filter: &str, cwd: &str) -> bool {
        let m = ProjectMatch::of(Some(filter));
        let d = normalise(cwd);
        !cwd.is_empty()
            && format!("{d}/").starts_with(&m.prefix)
            && format!("/{d}").ends_with(&m.suffix)
    }

    #[test]
    fn test_a_project_is_named_by_the_last_component_of_its_directory() {
        let named = |cwd: &str| Project::of(cwd).map(|p| p.name);
        assert_eq!(
            named("/home/dev/src/moraine-mcp").as_deref(),
            Some("moraine-mcp")
        );
        assert_eq!(
            named("/home/dev/src/moraine-mcp/").as_deref(),
            Some("moraine-mcp")
        );
        assert_eq!(
            named(r"C:\Users\dev\moraine-mcp\").as_deref(),
            Some("moraine-mcp")
        );
        assert_eq!(named("moraine-mcp").as_deref(), Some("moraine-mcp"));
        assert_eq!(named("/").as_deref(), Some("/"));
        assert_eq!(named(""), None);
        let project = Project::of("/home/dev/src/x/").unwrap();
        assert_eq!(project.path, "/home/dev/src/x/", "the path as recorded");
    }

    #[test]
    fn test_a_name_matches_the_last_component_exactly() {
        assert!(matches("tidepool", "/home/dev/src/tidepool"));
        assert!(matches("tidepool", "/home/dev/src/tidepool/"));
        assert!(matches("tidepool", r"D:\src\tidepool"));
        assert!(matches("tidepool", "tidepool"));
        assert!(!matches("tidepool", "/home/dev/src/tidepool/crates"));
        assert!(!matches("tidepool", "/home/dev/src/my-tidepool"));
        assert!(!matches("Tidepool", "/home/dev/src/tidepool"));
        assert!(!matches("tidepool", ""));
    }

    #[test]
    fn test_a_path_matches_its_directory_and_those_under_it() {
        for cwd in [
            "/home/dev/src/tidepool",
            "/home/dev/src/tidepool/",
            "/home/dev/src/tidepool/crates/api",
        ] {
            assert!(matches("/home/dev/src/tidepool", cwd), "{cwd}");
            assert!(matches("/home/dev/src/tidepool/", cwd), "{cwd}");
        }
        assert!(!matches("/home/dev/src/tide", "/home/dev/src/tidepool"));
        assert!(!matches(
            "/home/dev/src/tidepool/crates",
            "/home/dev/src/tidepool"
        ));
        assert!(matches(r"C:\src\tidepool", r"C:\src\tidepool\web"));
        assert!(matches("/", "/home/dev"));
        assert!(matches("/", "/"));
        assert!(!matches("/", "relative/dir"));
        assert!(!matches("/", ""));
        assert_eq!(ProjectMatch::of(None), ProjectMatch::default());
    }

    #[test]
    fn test_the_condition_holds_only_parameters() {
        let sql = project_condition!();
        assert!(sql.contains("{project_prefix:String}") && sql.contains("{project_suffix:String}"));
        assert!(!sql.contains('?') && !sql.contains('«'));
    }
}
