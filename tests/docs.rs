//! The README against the code: its configuration reference names every setting of
//! `config/moraine-mcp.toml`, and its test command is the one CI runs.

use std::path::Path;

fn read(relative: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)).unwrap()
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
fn the_readme_documents_every_setting_and_no_other() {
    let config: toml::Table = read("config/moraine-mcp.toml").parse().unwrap();
    let mut names = Vec::new();
    settings("", &config, &mut names);
    assert!(names.len() > 50, "{names:?}");
    let readme = read("README.md");
    // The reference table: rows that start with a backticked setting name.
    let documented: Vec<&str> = readme
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
        "settings missing from the README: {missing:?}"
    );
    let unknown: Vec<_> = documented
        .iter()
        .filter(|d| !names.iter().any(|n| n == *d))
        .collect();
    assert!(
        unknown.is_empty(),
        "README documents settings that do not exist: {unknown:?}"
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
