//! The documentation against the tree: the configuration reference (`docs/configuration.md`)
//! names every setting of `config/moraine-mcp.toml` and no other; the README's test command is
//! the one CI runs, and the README stays short; `CONTRIBUTING.md`'s source map names every
//! source file and test suite, and only paths that exist; every relative link in the README,
//! `CONTRIBUTING.md` and `docs/*.md` reaches an existing file (and heading); and the layering
//! the source map describes holds: no source file imports one that imports it back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

/// Dotted names of every setting (tables are descended into, arrays of tables are one setting).
fn settings(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => settings(&name, inner, out),
            _ => out.push(name),
        }
    }
}

#[test]
fn the_configuration_reference_documents_every_setting_and_no_other() {
    let config: toml::Table = read("config/moraine-mcp.toml").parse().unwrap();
    let mut names = Vec::new();
    settings("", &config, &mut names);
    assert!(names.len() > 50, "{names:?}");
    let reference = read("docs/configuration.md");
    // The reference table: rows that start with a backticked setting name.
    let documented: Vec<&str> = reference
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|n| n.contains('.'))
        .collect();
    let missing: Vec<_> = names
        .iter()
        .filter(|n| !documented.contains(&n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "settings missing from docs/configuration.md: {missing:?}"
    );
    let unknown: Vec<_> = documented
        .iter()
        .filter(|d| !names.iter().any(|n| n == *d))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/configuration.md documents settings that do not exist: {unknown:?}"
    );
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = read("README.md");
    let ci = read(".ci/run");
    assert!(readme.contains("./tests/run.sh"));
    assert!(
        ci.lines().any(|l| l.trim() == "exec ./tests/run.sh"),
        "{ci}"
    );
    assert!(readme.contains("cargo run --release -- up"));
}

/// The README is for a new user; the rest belongs in `docs/`.
const README_MAX_LINES: usize = 250;

#[test]
fn the_readme_is_short() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move details to docs/"
    );
}

/// Every `.rs` file under `dir`, as paths relative to the repository root with `/`.
fn rust_files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(relative(&path));
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The text of a Markdown section: from its heading to the next heading of the same or a
/// higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = text
        .lines()
        .position(|l| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("no {heading:?} heading"));
    let lines: Vec<&str> = text.lines().collect();
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            hashes > 0 && hashes <= level && l[hashes..].starts_with(' ')
        })
        .map_or(lines.len(), |at| start + 1 + at);
    let from = lines[..start].iter().map(|l| l.len() + 1).sum::<usize>();
    let to = lines[..end].iter().map(|l| l.len() + 1).sum::<usize>();
    &text[from..to.min(text.len())]
}

/// The backticked spans of a text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn the_source_map_names_every_source_file_and_test_suite_and_nothing_else() {
    let contributing = read("CONTRIBUTING.md");
    let map = section(&contributing, "## Source map");
    // Entries: list items and table rows that start with a backticked path.
    let entries: Vec<&str> = map
        .lines()
        .map(str::trim_start)
        .filter_map(|l| l.strip_prefix("- `").or_else(|| l.strip_prefix("| `")))
        .filter_map(|l| l.split('`').next())
        .collect();

    let mut wanted = Vec::new();
    rust_files(&root().join("src"), &mut wanted);
    for entry in std::fs::read_dir(root().join("tests")).unwrap() {
        let suite = entry.unwrap().path();
        if !suite.join("main.rs").is_file() {
            continue;
        }
        // A test binary (`cargo test --test <dir>`), and the integration binary's modules.
        wanted.push(format!("{}/", relative(&suite)));
        if suite.ends_with("it") {
            for entry in std::fs::read_dir(&suite).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    wanted.push(format!("{}/", relative(&path)));
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("main.rs")
                {
                    wanted.push(relative(&path));
                }
            }
        }
    }
    assert!(wanted.len() > 80, "{wanted:?}");
    let missing: Vec<_> = wanted
        .iter()
        .filter(|w| !entries.contains(&w.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md's source map does not name {missing:?} (one entry each: - `path` — what it holds)"
    );

    // A span may be a command (`tests/smoke.sh <base-url>`): its first word is the path.
    let named: Vec<&str> = code_spans(map)
        .into_iter()
        .filter_map(|s| s.split_whitespace().next())
        .filter(|s| s.starts_with("src/") || s.starts_with("tests/"))
        .collect();
    assert!(named.len() >= wanted.len(), "{named:?}");
    let absent: Vec<_> = named
        .iter()
        .filter(|p| !root().join(p.trim_end_matches('/')).exists())
        .collect();
    assert!(
        absent.is_empty(),
        "CONTRIBUTING.md's source map names paths that do not exist: {absent:?}"
    );
}

/// The documentation pages whose links are checked.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 8, "{docs:?}");
    pages.extend(docs);
    pages
}

/// The Markdown links of a page outside code: the targets of `[text](target)`.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Outside inline code spans only.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].trim().to_owned());
                rest = &rest[end..];
            }
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_reaches_an_existing_file() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            checked += 1;
            if !file.exists() {
                broken.push(format!("{}: {target} (no such file)", relative(&page)));
            } else if !fragment.is_empty()
                && file.extension().is_some_and(|e| e == "md")
                && !anchors(&file).iter().any(|a| a == fragment)
            {
                broken.push(format!("{}: {target} (no such heading)", relative(&page)));
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found");
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

/// The module path of a source file (`src/ingest/push.rs` → `ingest::push`).
fn module_of(file: &str) -> Vec<String> {
    let inner = file.trim_start_matches("src/").trim_end_matches(".rs");
    if inner == "lib" || inner == "main" {
        return Vec::new();
    }
    inner.split('/').map(str::to_owned).collect()
}

/// The source files a file imports from: each `crate::…` and `super::…` path its code names
/// outside its unit tests and comments (brace groups included), taken to the longest prefix
/// that is a file.
fn imports(file: &str, text: &str, files: &[String]) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let text: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let module = module_of(file);
    let by_module: std::collections::HashMap<Vec<String>, &String> =
        files.iter().map(|f| (module_of(f), f)).collect();
    let resolve = |parts: Vec<String>| {
        (1..=parts.len())
            .rev()
            .find_map(|n| by_module.get(&parts[..n]).copied())
            .cloned()
    };
    let path = regex::Regex::new(r"\b(crate|super)((?:::(?:r#)?\w+)+)(::\{([^}]*)\})?").unwrap();
    let mut out = BTreeSet::new();
    for found in path.captures_iter(&text) {
        let mut base: Vec<String> = if &found[1] == "crate" {
            Vec::new()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        base.extend(
            found[2]
                .split("::")
                .skip(1)
                .map(|p| p.trim_start_matches("r#").to_owned()),
        );
        let mut targets = vec![base.clone()];
        if let Some(group) = found.get(4) {
            for item in group.as_str().split(',') {
                let item = item
                    .trim()
                    .split("::")
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("r#");
                if !item.is_empty() && item != "self" {
                    targets.push([base.clone(), vec![item.to_owned()]].concat());
                }
            }
        }
        out.extend(
            targets
                .into_iter()
                .filter_map(&resolve)
                .filter(|t| t != file),
        );
    }
    out
}

#[test]
fn no_source_file_imports_one_that_imports_it_back() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let edges: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .map(|f| (f.clone(), imports(f, &read(f), &files)))
        .collect();
    // A circle through `file`: a path of imports from one of its imports back to it.
    let circle_through = |file: &String| -> Option<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<Vec<String>> = edges[file].iter().map(|t| vec![t.clone()]).collect();
        while let Some(path) = stack.pop() {
            let last = path.last().unwrap();
            if last == file {
                return Some(path);
            }
            if seen.insert(last.clone()) {
                for next in &edges[last] {
                    stack.push([path.clone(), vec![next.clone()]].concat());
                }
            }
        }
        None
    };
    let circles: Vec<String> = files
        .iter()
        .filter_map(|f| circle_through(f).map(|c| format!("{f} -> {}", c.join(" -> "))))
        .collect();
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 200,
        "{edges:?}"
    );
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
