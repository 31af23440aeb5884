//! Projects: every session summary names the project its log's working directory gives, and
//! `search_sessions` and `list_sessions` keep to one project by name or by path, in every
//! scope, with cursors bound to the filter and tokens still limited to their sources.

use super::*;

use std::path::{Path, PathBuf};

use moraine_mcp::config::{Settings, TokenConfig};
use moraine_mcp::db::Db;
use moraine_mcp::ingest;

const EVERYTHING: &str = "project-reader-token-0123456789";
const ALICE_ONLY: &str = "project-alice-token-0123456789";

fn list_args(project: Option<&str>) -> Value {
    let mut args = json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50});
    if let Some(project) = project {
        args["project"] = json!(project);
    }
    args
}

fn ids_of(sessions: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = sessions
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// The sessions `list_sessions` gives for `project`, all pages read.
async fn listed(c: &mut Mcp, args: Value) -> Vec<Value> {
    let e = c.ok("list_sessions", args).await;
    assert!(e["data"]["next_cursor"].is_null(), "one page: {e}");
    e["data"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["session"].clone())
        .collect()
}

#[tokio::test]
async fn every_session_summary_names_its_project() {
    let mut c = client().await;
    let sessions = all_sessions(&mut c).await;
    assert_eq!(sessions.len(), 12);
    let project_of = |id: &str| {
        sessions
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["session"]["project"].clone())
            .unwrap()
    };
    // Each fixture's log records its working directory: the project is its last component.
    assert_eq!(
        project_of(&codex_basic()),
        json!({"name": "tidepool", "path": "/home/dev/src/tidepool"})
    );
    assert_eq!(
        project_of(&claude_interrupt()),
        json!({"name": "cartographe", "path": "/home/dev/src/cartographe"})
    );
    let names: HashSet<&str> = sessions
        .iter()
        .map(|s| s["session"]["project"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        HashSet::from([
            "tidepool",
            "cartographe",
            "quillboard",
            "driftwood",
            "ledgerline"
        ])
    );

    // Search hits, open(session) and open(turn) name the same project as the listing.
    let e = c
        .ok("search_sessions", json!({"query": "test", "n_hits": 50}))
        .await;
    assert!(!hits(&e).is_empty());
    for hit in hits(&e) {
        let id = hit["session"]["id"].as_str().unwrap();
        assert_eq!(hit["session"]["project"], project_of(id), "{id}");
    }
    let opened = c.ok("open", json!({"id": codex_basic()})).await;
    assert_eq!(opened["data"]["session"]["project"]["name"], "tidepool");
    let turn = second_turn_of(&mut c, &codex_interrupt()).await;
    let opened = c.ok("open", json!({"id": turn})).await;
    assert_eq!(
        opened["data"]["session"]["project"],
        project_of(&codex_interrupt())
    );
    // The compact text names it too.
    let text = c.call("open", json!({"id": codex_basic()})).await["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("project tidepool"), "{text}");
}

#[tokio::test]
async fn a_project_by_name_or_path_filters_list_and_search() {
    let mut c = client().await;
    let everything = all_sessions(&mut c).await;
    let tidepool: Vec<String> = {
        let mut ids: Vec<String> = everything
            .iter()
            .filter(|s| s["session"]["project"]["name"] == "tidepool")
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert!(tidepool.len() >= 2 && tidepool.len() < everything.len());

    // By name, by path (with or without a trailing slash), by a parent path.
    for project in [
        "tidepool",
        "/home/dev/src/tidepool",
        "/home/dev/src/tidepool/",
        r"\home\dev\src\tidepool",
    ] {
        let e = c.ok("list_sessions", list_args(Some(project))).await;
        assert_eq!(e["request"]["project"], project);
        let sessions: Vec<Value> = e["data"]["sessions"].as_array().unwrap().clone();
        assert_eq!(ids_of(&sessions), tidepool, "{project}");
    }
    let parent = listed(&mut c, list_args(Some("/home/dev/src"))).await;
    assert_eq!(parent.len(), everything.len());
    // A name or path that matches nothing is an empty answer, not an error: names are exact
    // and case-sensitive, and a path matches whole components.
    for project in [
        "Tidepool",
        "tide",
        "src",
        "/home/dev/src/tide",
        "/home/dev/src/tidepool/crates",
        "no-such-project",
    ] {
        let e = c.ok("list_sessions", list_args(Some(project))).await;
        assert_eq!(e["data"]["result_count"], 0, "{project}");
        let e = c
            .ok(
                "search_sessions",
                json!({"query": "test", "project": project}),
            )
            .await;
        assert_eq!(e["data"]["result_count"], 0, "{project}");
        assert_eq!(e["data"]["truncated"], false);
    }

    // Search: every hit is of the project, by name as by path, and the filter is echoed.
    let by_name = c
        .ok(
            "search_sessions",
            json!({"query": "test", "project": "tidepool", "n_hits": 50}),
        )
        .await;
    assert_eq!(by_name["request"]["project"], "tidepool");
    assert!(!hits(&by_name).is_empty());
    assert!(
        hits(&by_name)
            .iter()
            .all(|h| h["session"]["project"]["name"] == "tidepool")
    );
    let by_path = c
        .ok(
            "search_sessions",
            json!({"query": "test", "project": "/home/dev/src/tidepool/", "n_hits": 50}),
        )
        .await;
    let ids = |e: &Value| -> Vec<Value> { hits(e).iter().map(|h| h["id"].clone()).collect() };
    assert_eq!(ids(&by_name), ids(&by_path));
    // With the other filters.
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "project": "tidepool", "harness": "codex", "n_hits": 50}),
        )
        .await;
    assert!(!hits(&e).is_empty());
    assert!(hits(&e).iter().all(
        |h| h["session"]["harness"] == "codex" && h["session"]["project"]["name"] == "tidepool"
    ));

    // Within a session or a turn: its own project changes nothing, another empties it.
    let turn = second_turn_of(&mut c, &codex_basic()).await;
    for within in [codex_basic(), turn] {
        let plain = c
            .ok(
                "search_sessions",
                json!({"query": "test", "within_id": within, "n_hits": 50}),
            )
            .await;
        assert!(!hits(&plain).is_empty(), "{within}");
        let own = c
            .ok(
                "search_sessions",
                json!({"query": "test", "within_id": within, "n_hits": 50, "project": "tidepool"}),
            )
            .await;
        assert_eq!(ids(&own), ids(&plain), "{within}");
        let other = c
            .ok(
                "search_sessions",
                json!({"query": "test", "within_id": within, "project": "cartographe"}),
            )
            .await;
        assert_eq!(other["data"]["result_count"], 0, "{within}");
    }
}

#[tokio::test]
async fn an_empty_or_too_long_project_is_invalid_request() {
    let mut c = client().await;
    for project in [json!(""), json!("p".repeat(1025)), json!(42)] {
        for (tool, mut args) in [
            ("search_sessions", json!({"query": "test"})),
            ("list_sessions", list_args(None)),
        ] {
            args["project"] = project.clone();
            let (code, e) = c.err(tool, args).await;
            assert_eq!(code, "invalid_request", "{tool} {project}");
            assert_eq!(e["error"]["details"]["field"], "project");
            assert_eq!(
                e["error"]["message"],
                "project must be a non-empty string of at most 1024 characters"
            );
        }
    }
    // The longest accepted value is an answer (that finds nothing).
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "project": "p".repeat(1024)}),
        )
        .await;
    assert_eq!(e["data"]["result_count"], 0);
}

#[tokio::test]
async fn a_list_cursor_is_bound_to_its_project() {
    let mut c = client().await;
    let mut first = list_args(Some("tidepool"));
    first["limit"] = json!(2);
    let page = c.ok("list_sessions", first.clone()).await;
    let cursor = page["data"]["next_cursor"].as_str().unwrap().to_owned();
    let with = |project: Option<&str>| {
        let mut args = first.clone();
        args["cursor"] = json!(cursor);
        match project {
            Some(p) => args["project"] = json!(p),
            None => {
                args.as_object_mut().unwrap().remove("project");
            }
        }
        args
    };
    for other in [Some("cartographe"), Some("/home/dev/src/tidepool"), None] {
        let (code, e) = c.err("list_sessions", with(other)).await;
        assert_eq!(code, "invalid_request", "{other:?}");
        assert_eq!(e["error"]["details"]["field"], "cursor");
    }
    // A cursor from an unfiltered listing does not serve a project's either.
    let plain = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 2}),
        )
        .await;
    let mut args = list_args(Some("tidepool"));
    args["cursor"] = plain["data"]["next_cursor"].clone();
    let (code, _) = c.err("list_sessions", args).await;
    assert_eq!(code, "invalid_request");
    // The same filter pages on, and the pages hold only its sessions.
    let next = c.ok("list_sessions", with(Some("tidepool"))).await;
    assert_eq!(next["data"]["sessions"][0]["rank"], 3);
    assert!(
        next["data"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["session"]["project"]["name"] == "tidepool")
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-project-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A Claude Code session of one turn that mentions `word`, in a log recording `cwd` (none
/// when `None`), started on day `day` of June 2026.
fn write_session(dir: &Path, n: u32, cwd: Option<&str>, word: &str) {
    use std::io::Write as _;
    let folder = dir.join("projects").join(format!("-p{n}"));
    std::fs::create_dir_all(&folder).unwrap();
    let id = format!("0000c0d0-{n:04x}-4000-8000-00000000{n:04x}");
    let mut user = json!({"type": "user", "sessionId": id, "timestamp": format!("2026-06-{:02}T10:00:00.000Z", n + 1),
        "message": {"role": "user", "content": format!("{word} question about the build")}});
    if let Some(cwd) = cwd {
        user["cwd"] = json!(cwd);
    }
    let answer = json!({"type": "assistant", "sessionId": id, "timestamp": format!("2026-06-{:02}T10:00:05.000Z", n + 1),
        "message": {"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": format!("{word} answer")}]}});
    let mut file = std::fs::File::create(folder.join(format!("{id}.jsonl"))).unwrap();
    writeln!(file, "{user}\n{answer}").unwrap();
}

/// Ingests the logs under `dir` as stored by `source`.
async fn ingest_as(settings: &Settings, db: &Db, dir: &Path, source: &str) {
    let (files, problems) = ingest::files::from_paths(&[dir.to_owned()], None, Some(source));
    assert!(problems.is_empty(), "{problems:?}");
    let config = settings.clone().validate().unwrap();
    ingest::run(&config, db, files, false).await.unwrap();
}

#[tokio::test]
async fn paths_match_subdirectories_and_windows_paths_and_tokens_keep_to_their_sources() {
    let (alice, bob) = (scratch("alice"), scratch("bob"));
    let cwds: [(u32, Option<&str>); 6] = [
        (1, Some("/home/dev/src/tidepool/crates/api")),
        (2, Some("/home/dev/src/tidepool-web")),
        (3, Some(r"C:\Users\dev\tidepool\")),
        (4, Some("/srv/build/tidepool/")),
        (5, None),
        (6, Some("/home/dev/src/tidepool")),
    ];
    for (n, cwd) in cwds {
        write_session(&alice, n, cwd, "zephyrword");
    }
    // Bob worked in the same repository.
    write_session(&bob, 7, Some("/home/dev/src/tidepool"), "zephyrword");
    let (mut settings, db) = common::fresh_db().await;
    ingest_as(&settings, &db, &alice, "alice").await;
    ingest_as(&settings, &db, &bob, "bob").await;
    let mut limited = TokenConfig::reader("alice-only", ALICE_ONLY);
    limited.read_sources = Some(vec!["alice".into()]);
    settings.auth.tokens = vec![TokenConfig::reader("everything", EVERYTHING), limited];
    let server = TestServer::start(settings, db).await;
    let mut c = Mcp::modern(&server.mcp_url, Some(EVERYTHING)).await;
    let window = json!({"start_datetime": "2026-06-01T00:00:00Z", "end_datetime": "2026-07-01T00:00:00Z", "limit": 50});

    // The sessions' projects: names from the last component, paths as recorded.
    let all = c.ok("list_sessions", window.clone()).await;
    let projects: Vec<&Value> = all["data"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| &item["session"]["project"])
        .collect();
    assert_eq!(projects.len(), 7);
    for expected in [
        json!({"name": "api", "path": "/home/dev/src/tidepool/crates/api"}),
        json!({"name": "tidepool-web", "path": "/home/dev/src/tidepool-web"}),
        json!({"name": "tidepool", "path": r"C:\Users\dev\tidepool\"}),
        json!({"name": "tidepool", "path": "/srv/build/tidepool/"}),
        Value::Null,
    ] {
        assert!(projects.contains(&&expected), "{expected} in {projects:?}");
    }

    // Which of the sessions each filter keeps, by the day they started (1 + n).
    let days = |e: &Value, field: &str| -> Vec<u32> {
        let mut days: Vec<u32> = e["data"][field]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let started = item["session"]["started_at"].as_str().unwrap();
                started[8..10].parse::<u32>().unwrap() - 1
            })
            .collect();
        days.sort();
        days.dedup();
        days
    };
    for (project, expected) in [
        ("tidepool", vec![3, 4, 6, 7]),
        ("/home/dev/src/tidepool", vec![1, 6, 7]),
        ("/home/dev/src/tidepool/crates/api/", vec![1]),
        ("/home/dev/src/tidepool/crates", vec![1]),
        ("/home/dev/src", vec![1, 2, 6, 7]),
        (r"C:\Users\dev\tidepool", vec![3]),
        ("C:/Users", vec![3]),
        ("/", vec![1, 2, 4, 6, 7]),
        ("api", vec![1]),
        ("tidepool-web", vec![2]),
        ("crates", vec![]),
    ] {
        let mut args = window.clone();
        args["project"] = json!(project);
        let e = c.ok("list_sessions", args).await;
        assert_eq!(days(&e, "sessions"), expected, "list {project}");
        let e = c
            .ok(
                "search_sessions",
                json!({"query": "zephyrword", "n_hits": 50, "project": project}),
            )
            .await;
        assert_eq!(days(&e, "results"), expected, "search {project}");
    }

    // A reader of alice's sessions never sees bob's, with a project filter or without.
    let mut alice_only = Mcp::modern(&server.mcp_url, Some(ALICE_ONLY)).await;
    for project in ["tidepool", "/home/dev/src/tidepool", "/"] {
        let mut args = window.clone();
        args["project"] = json!(project);
        let e = alice_only.ok("list_sessions", args).await;
        let sessions = e["data"]["sessions"].as_array().unwrap();
        assert!(!sessions.is_empty(), "{project}");
        assert!(sessions.iter().all(|s| s["session"]["source"] == "alice"));
        assert!(!days(&e, "sessions").contains(&7), "{project}");
        let e = alice_only
            .ok(
                "search_sessions",
                json!({"query": "zephyrword", "n_hits": 50, "project": project}),
            )
            .await;
        assert!(!hits(&e).is_empty(), "{project}");
        assert!(hits(&e).iter().all(|h| h["session"]["source"] == "alice"));
        // And a source filter naming bob's source finds nothing for it.
        let e = alice_only
            .ok(
                "search_sessions",
                json!({"query": "zephyrword", "project": project, "source": "bob"}),
            )
            .await;
        assert_eq!(e["data"]["result_count"], 0);
    }
    server.stop().await;
}
