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
    let mut files = vec![root().join("README.md")];
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
