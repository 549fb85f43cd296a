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
            "public_ids",
            "config",
            "telemetry",
            "service_error",
            "validation",
            "pages",
            "backoff",
            "doorbell",
            "crash",
            "http_client",
        ],
    ),
    ("storage", &["db", "users", "audit", "embedded_postgres"]),
    ("idempotency", &["idempotency"]),
    ("payments", &["payments"]),
    ("wire", &["wire"]),
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
            "ledger",
            "drivers",
        ],
    ),
    ("http", &["http"]),
    ("application", &["startup", "cli"]),
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
        "place {unplaced:?} in a layer of tests/api/codebase/architecture.rs and docs/ARCHITECTURE.md"
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

/// The lines of a source file that are not its unit tests: all of them up
/// to its `#[cfg(test)]` module.
fn lines_before_tests(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .count()
}

/// The rows of the table under `heading` in `docs/ARCHITECTURE.md`: the
/// backquoted file of each, and the number after it.
fn walk(heading: &str) -> (Vec<(String, usize)>, usize) {
    let document =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
            .unwrap();
    let section = document
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no {heading:?}"));
    let section = section.split("\n## ").next().unwrap();
    let number = |cell: &str| -> usize {
        cell.trim()
            .trim_matches('*')
            .replace(',', "")
            .parse()
            .unwrap()
    };
    let mut files = Vec::new();
    let mut total = None;
    for row in section.lines().filter(|line| line.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if let Some(file) = cells[2].strip_prefix('`').and_then(|c| c.strip_suffix('`')) {
            files.push((file.to_owned(), number(cells[3])));
        } else if cells[2] == "**total**" {
            total = Some(number(cells[3]));
        }
    }
    (files, total.expect("a total row"))
}

/// The reading cost of a new ride: the files `docs/ARCHITECTURE.md` lists to
/// follow `POST /api/rides` exist, number at most 25 and hold the lines it
/// says, which add up to its total, at most `MOST_LINES`.
#[test]
fn following_a_new_ride_takes_the_files_and_lines_the_architecture_lists() {
    const MOST_FILES: usize = 25;
    // DESIGN §7 aims at 3,500; this bound only comes down towards it.
    const MOST_LINES: usize = 3_500;
    let (files, total) = walk("## Following `POST /api/rides`");
    assert!(files.len() <= MOST_FILES, "{} files", files.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut counted = 0;
    for (file, stated) in &files {
        let path = root.join(file);
        assert!(path.exists(), "{file} is listed but does not exist");
        let lines = lines_before_tests(&path);
        assert_eq!(lines, *stated, "{file}: the table says {stated} lines");
        counted += lines;
    }
    assert_eq!(counted, total, "the rows add up to {counted}");
    assert!(total <= MOST_LINES, "{total} lines to read");
}

/// What adding an endpoint takes, on the tip endpoint: the files it owns,
/// and nothing else in `src/` naming it but the lines the architecture
/// counts (the list of endpoints, two module declarations and its body).
#[test]
fn the_tip_endpoint_owns_its_files_and_is_named_nowhere_else() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let owned = [
        "src/rides/tip.rs",
        "src/http/rides/tip.rs",
        "migrations/2026-12-02-000025_tips/up.sql",
        "migrations/2026-12-02-000025_tips/down.sql",
    ];
    for file in owned {
        assert!(root.join(file).exists(), "{file}");
    }
    let naming = ["TipEndpoint", "TipBody", "rides::tip", "mod tip;"];
    let mut named_in: BTreeSet<String> = BTreeSet::new();
    for files in modules().into_values() {
        for file in files {
            let relative = file.strip_prefix(root).unwrap().display().to_string();
            if owned.contains(&relative.as_str()) {
                continue;
            }
            let code = code(&file);
            if naming.iter().any(|name| names_word(&code, name)) {
                named_in.insert(relative);
            }
        }
    }
    for file in ["src/lib.rs", "src/main.rs"] {
        assert!(!code(&root.join(file)).contains("TipEndpoint"), "{file}");
    }
    assert_eq!(
        named_in.into_iter().collect::<Vec<_>>(),
        [
            "src/endpoints.rs",
            "src/http/rides/mod.rs",
            "src/rides/mod.rs",
            "src/wire/ride_actions.rs",
        ]
    );
}

/// Whether `text` holds `word`, not as the start of a longer name
/// (`rides::tip` is not in `rides::tip_cents`).
fn names_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        !text[at + word.len()..]
            .chars()
            .next()
            .is_some_and(|next| next.is_alphanumeric() || next == '_')
    })
}
