//! The layers of `docs/ARCHITECTURE.md` inside the service crate, checked
//! on the source: imports between top-level modules point down (or sideways
//! within a layer) and never round a loop; only the HTTP layer knows actix;
//! only it and `wire` know OpenAPI's schemas and the paths routes are served
//! at. (Between crates, the compiler holds the ladder:
//! the service depends on `ridepay-gateway` and `ridepay-doubles`, which
//! cannot name it.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module of `src/`, by layer, bottom first.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundations",
        &[
            "schema",
            "ids",
            "config",
            "telemetry",
            "service_error",
            "validation",
            "backoff",
            "crash",
            "http_client",
        ],
    ),
    ("storage", &["db", "users", "audit", "embedded_postgres"]),
    ("idempotency", &["idempotency"]),
    ("wire", &["wire"]),
    ("payments", &["payments"]),
    (
        "endpoints",
        &[
            "context",
            "rides",
            "refunds",
            "gateway_events",
            "user_webhooks",
            "endpoints",
            "reconciliation",
        ],
    ),
    ("http", &["http"]),
    ("application", &["startup", "workers", "cli"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), found);
        }
    } else if path.extension().is_some_and(|ext| ext == "rs") {
        found.push(path.to_owned());
    }
}

/// The top-level modules of `src/` (lib.rs and main.rs aside), each with its
/// files.
fn modules() -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&path, &mut files);
        modules.insert(name, files);
    }
    modules
}

/// Code without comments, so a doc line that names a module is no import.
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| line.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `text` names through `crate::`, grouped imports
/// (`crate::{a, b::c}`) included.
fn named(text: &str, modules: &BTreeMap<String, Vec<PathBuf>>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let heads: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .map(|part| part.trim())
                .collect(),
            None => vec![rest],
        };
        for head in heads {
            let name: String = head
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains_key(&name) {
                names.insert(name);
            }
        }
    }
    names
}

/// Who imports whom, with a file that shows each import.
fn imports() -> BTreeMap<(String, String), PathBuf> {
    let modules = modules();
    let mut edges = BTreeMap::new();
    for (module, files) in &modules {
        for file in files {
            for target in named(&code(file), &modules) {
                if &target != module {
                    edges
                        .entry((module.clone(), target))
                        .or_insert_with(|| file.clone());
                }
            }
        }
    }
    edges
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, members)| members.contains(&module))
}

#[test]
fn every_top_level_module_has_a_layer() {
    let unplaced: Vec<String> = modules()
        .into_keys()
        .filter(|module| layer_of(module).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "place {unplaced:?} in a layer of tests/api/architecture.rs and docs/ARCHITECTURE.md"
    );
}

#[test]
fn imports_between_top_level_modules_point_down_the_layers() {
    let upward: Vec<String> = imports()
        .into_iter()
        .filter(|((from, to), _)| layer_of(to) > layer_of(from))
        .map(|((from, to), file)| format!("{from} -> {to} ({})", file.display()))
        .collect();
    assert!(upward.is_empty(), "imports up the layers: {upward:#?}");
}

#[test]
fn no_two_top_level_modules_import_each_other_even_round_a_loop() {
    let edges = imports();
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from).or_default().push(to);
    }
    // A module that reaches itself is on a loop.
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = graph[start].clone();
        while let Some(next) = stack.pop() {
            assert_ne!(next, *start, "{start} imports itself round a loop");
            if seen.insert(next) {
                stack.extend(graph.get(next).into_iter().flatten());
            }
        }
    }
}

#[test]
fn the_check_sees_a_loop_and_an_upward_import() {
    let modules: BTreeMap<String, Vec<PathBuf>> = ["db", "http", "rides"]
        .into_iter()
        .map(|m| (m.to_owned(), Vec::new()))
        .collect();
    let found = named(
        "use crate::{db::DbPool, http::problem};\nlet x = crate::rides::model::find(c);",
        &modules,
    );
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        ["db", "http", "rides"]
    );
    assert!(layer_of("http") > layer_of("db"));
}

/// The files of `src/` outside the top-level modules `allowed` whose code
/// (comments aside) holds any of `needles`.
fn outside(allowed: &[&str], needles: &[String]) -> Vec<String> {
    let mut offenders = Vec::new();
    for (module, files) in modules() {
        if allowed.contains(&module.as_str()) {
            continue;
        }
        for file in files {
            let code = code(&file);
            for needle in needles
                .iter()
                .filter(|needle| code.contains(needle.as_str()))
            {
                offenders.push(format!("{} ({needle})", file.display()));
            }
        }
    }
    offenders
}

#[test]
fn only_the_http_layer_knows_actix() {
    let offenders = outside(&["http"], &["actix_web".to_owned()]);
    assert!(
        offenders.is_empty(),
        "actix outside the http layer: {offenders:?}"
    );
}

/// The first segment of every path the OpenAPI document serves, as a
/// string literal starts it (`"/api`, `"/webhooks`, ...).
fn served_prefixes() -> Vec<String> {
    let document: serde_json::Value =
        serde_json::from_str(ridepay::http::openapi::document()).unwrap();
    let mut prefixes: Vec<String> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(|path| format!("\"/{}", path[1..].split('/').next().unwrap()))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    prefixes
}

#[test]
fn only_wire_and_http_know_schemas_and_where_routes_are_served() {
    let prefixes = served_prefixes();
    assert!(prefixes.contains(&"\"/api".to_owned()), "{prefixes:?}");
    let mut needles = prefixes;
    needles.push("utoipa".to_owned());
    let offenders = outside(&["wire", "http"], &needles);
    assert!(
        offenders.is_empty(),
        "OpenAPI schemas or route paths outside wire and http: {offenders:#?}"
    );
}
