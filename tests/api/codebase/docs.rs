//! The documentation holds together: every relative link in `README.md` and
//! `docs/*.md` names a file or folder that exists, and the README stays
//! short enough to read at one sitting. No network: web links (`http://`,
//! `https://`), `mailto:` and links within the page (`#...`) are not followed.

use std::path::{Path, PathBuf};

/// The README's length, a little over the ~200 lines it aims at.
const README_MAX_LINES: usize = 220;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every `docs/*.md`.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The text with fenced code blocks and inline code spans blanked out, so
/// that brackets in code (`expand[]=...`, shell, Rust, mermaid) are not
/// taken for links. Line breaks are kept, for the line numbers.
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let is_fence =
            marker.len() >= 3 && marker.chars().all(|c| c == marker.chars().next().unwrap());
        match &fence {
            Some(open) => {
                if is_fence
                    && marker.starts_with(open.as_str())
                    && trimmed[marker.len()..].trim().is_empty()
                {
                    fence = None;
                }
                out.push('\n');
            }
            None if is_fence => {
                fence = Some(marker);
                out.push('\n');
            }
            None => out.push_str(line),
        }
    }
    strip_code_spans(&out)
}

/// Inline code spans (a run of backticks up to the next run of the same
/// length) blanked out; an unclosed run is left as text.
fn strip_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let other = chars[j..].iter().take_while(|&&c| c == '`').count();
                if other == run {
                    close = Some(j);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                out.extend(
                    chars[i..j + run]
                        .iter()
                        .map(|&c| if c == '\n' { '\n' } else { ' ' }),
                );
                i = j + run;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// Every `[text](target)` of the prose, with its line number: the target is
/// what stands between `](` and the closing `)`, less an optional title.
fn links(prose: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut rest = prose;
    let mut offset = 0;
    while let Some(at) = rest.find("](") {
        let start = at + 2;
        let Some(len) = rest[start..].find(')') else {
            break;
        };
        let target = rest[start..start + len]
            .split_whitespace()
            .next()
            .unwrap_or("");
        let line = prose[..offset + at].matches('\n').count() + 1;
        found.push((
            line,
            target.trim_matches(|c| c == '<' || c == '>').to_string(),
        ));
        offset += start + len;
        rest = &rest[start + len..];
    }
    found
}

fn is_external(target: &str) -> bool {
    target.starts_with("http://")
        || target.starts_with("https://")
        || target.starts_with("mailto:")
        || target.starts_with('#')
}

#[test]
fn every_relative_link_in_the_docs_resolves_and_the_readme_stays_short() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for (line, target) in links(&prose(&text)) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap();
            checked += 1;
            if !Path::new(dir).join(path).exists() {
                let name = file
                    .strip_prefix(root())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                broken.push(format!("{name}:{line}: {target}"));
            }
        }
    }
    assert!(
        checked > 0,
        "no relative link found: the link parser is broken"
    );
    assert!(
        broken.is_empty(),
        "links that resolve to nothing:\n{}",
        broken.join("\n")
    );

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; keep it under {README_MAX_LINES} and move detail to docs/"
    );
}

/// The module a path names under `dir` (`rides::create::answers` under
/// `tests/api`), as a file: `rides/create/answers.rs` or `…/mod.rs`.
fn module_file(dir: &str, path: &[&str]) -> Option<PathBuf> {
    if path.is_empty() {
        return None;
    }
    let base = root().join(dir).join(path.join("/"));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|file| file.is_file())
}

/// The code of the test binary `name` other than this suite (`ha`:
/// `tests/ha/`, or a file `tests/<name>.rs`), all its files together.
fn another_test_binary(name: &str) -> Option<String> {
    let folder = root().join("tests").join(name);
    let file = folder.with_extension("rs");
    if file.is_file() {
        return std::fs::read_to_string(file).ok();
    }
    let entries = std::fs::read_dir(&folder).ok()?;
    Some(
        entries
            .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
            .collect(),
    )
}

/// Whether `code` defines the test `name` (cut short by `...`: one whose
/// name starts so).
fn defines_test(code: &str, name: &str) -> bool {
    match name.strip_suffix("...") {
        Some(start) => code.contains(&format!("fn {start}")),
        None => code.contains(&format!("fn {name}(")),
    }
}

/// Whether a path's last segment reads as a test's name: a sentence.
fn reads_as_a_test(parts: &[&str]) -> bool {
    parts
        .last()
        .is_some_and(|name| name.matches('_').count() >= 4)
}

/// Whether a backquoted path names code in `src/` rather than a test: the
/// whole path is a module there, or its module is there and not in the
/// suite (`refunds::model::lock_ride`).
fn names_src(parts: &[&str]) -> bool {
    let module = &parts[..parts.len() - 1];
    module_file("src", parts).is_some()
        || (module_file("src", module).is_some() && module_file("tests/api", module).is_none())
}

/// Whether the test a path names (`module::…::name` or `module::…::*`) is
/// there: the longest leading path that is a test module's file, then
/// modules declared inside it, then a function of that name (or `*`).
fn names_a_test(parts: &[&str]) -> bool {
    let (last, path) = parts.split_last().unwrap();
    (1..=path.len()).rev().any(|files| {
        let Some(file) = module_file("tests/api", &path[..files]) else {
            return false;
        };
        let code = std::fs::read_to_string(file).unwrap();
        // A module declared in the file, or by a macro (`crash_tests_of!`)
        // whose first argument names it.
        path[files..].iter().all(|inner| {
            code.contains(&format!("mod {inner} {{"))
                || code.contains(&format!("! {{\n        {inner},"))
        }) && (*last == "*" || defines_test(&code, last))
    })
}

/// The backquoted spans of `text` that are paths of two or more segments
/// (`rides::tip::a_tip_for_…`, `guards::*`), a name cut short by `...`.
fn backquoted_paths(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| {
            span.contains("::")
                && span.split("::").all(|segment| {
                    let name = segment.strip_suffix("...").unwrap_or(segment);
                    segment == "*"
                        || (!name.is_empty()
                            && name
                                .chars()
                                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                })
        })
        .collect()
}

/// Every test the docs name by its path in the suite (a backquoted
/// `rides::tip::a_tip_…`, or `module::*`) exists there, so that a
/// guarantee never points at a test that moved or went.
#[test]
fn every_test_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let text = std::fs::read_to_string(&document).unwrap();
        for path in backquoted_paths(&text) {
            let parts: Vec<&str> = path.split("::").collect();
            if module_file("tests/api", &parts[..1]).is_none() {
                // A test's name in a module the suite no longer has (one
                // that moved), unless the path is code of `src/`.
                let elsewhere = another_test_binary(parts[0]);
                let found = match &elsewhere {
                    Some(code) => defines_test(code, parts[parts.len() - 1]),
                    None => module_file("src", &parts[..1]).is_some() || !reads_as_a_test(&parts),
                };
                if !found {
                    missing.push(format!("{}: {path}", document.display()));
                }
                continue;
            }
            if names_src(&parts) {
                continue;
            }
            checked += 1;
            if !names_a_test(&parts) {
                missing.push(format!("{}: {path}", document.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} test references found");
    assert!(
        missing.is_empty(),
        "tests the docs name that do not exist: {missing:#?}"
    );
}
