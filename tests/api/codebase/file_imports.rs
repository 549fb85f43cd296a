//! No file of any crate of the workspace imports one that imports it back,
//! directly or round a loop: every crate's files form a ladder too, so each
//! can be read knowing only what is below it. An import is a path in a `use`
//! (groups expanded) or in code, through `crate::`, `super::`, `self::` or a
//! child module's name, resolved to the file that holds the module it names.
//! A `mod` declaration is not an import: a module's root may re-export its
//! children, and then the children import one another, never the root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `src` folder of every crate of the workspace.
const CRATES: &[&str] = &[
    "src",
    "diesel-helpers/src",
    "gateway/src",
    "doubles/src",
    "tools/src",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // Binaries are crates of their own.
            if path.file_name().is_some_and(|name| name != "bin") {
                rust_files(&path, found);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are module `a::b`; `src/lib.rs` the root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_str().unwrap().to_owned())
        .collect();
    if matches!(
        path.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        path.pop();
    }
    path
}

/// The file of the longest prefix of `path` that is a module.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    (0..=path.len()).rev().find_map(|n| {
        let prefix = &path[..n];
        if prefix.is_empty() {
            return Some(src.join("lib.rs")).filter(|file| file.exists());
        }
        let joined: PathBuf = prefix.iter().collect();
        [
            src.join(&joined).with_extension("rs"),
            src.join(&joined).join("mod.rs"),
        ]
        .into_iter()
        .find(|file| file.exists())
    })
}

/// Code without comments, string literals or attributes' contents.
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| line.split("//").next().unwrap())
        .filter(|line| !line.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a::{b, c::{d, self}}` as `a::b`, `a::c::d`, `a::c`.
fn expand(tree: &str) -> Vec<String> {
    // Renames (`d as e`) name `d`.
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "as" {
            // The new name goes; what follows it (`,` `}`) stays.
            if let Some(name) = words.get(i + 1) {
                kept.push(name.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'));
            }
            i += 2;
            continue;
        }
        kept.push(words[i]);
        i += 1;
    }
    let tree: String = kept.concat();
    let Some(open) = tree.find('{') else {
        return vec![tree.trim_end_matches("::self").to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| {
            expand(part).into_iter().map(|path| match path.as_str() {
                "self" => prefix.trim_end_matches("::").to_owned(),
                _ => format!("{prefix}{path}"),
            })
        })
        .collect()
}

/// `text` with the blocks of its inline modules (`mod tests { ... }`) taken
/// out: their `super::` is the file itself, and what they import is the
/// file's to import too, or only theirs (a test's).
fn without_inline_modules(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("mod ") {
        let after = &rest[at + 4..];
        let name_end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let opens = after[name_end..].trim_start().starts_with('{');
        let word_start = rest[..at]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if !(opens && word_start && name_end > 0) {
            out.push_str(&rest[..at + 4]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        let block = &after[name_end..];
        let open = block.find('{').unwrap();
        let mut depth = 0;
        let mut end = block.len();
        for (i, c) in block[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &block[end..];
    }
    out.push_str(rest);
    out
}

/// Every path `text` names: `use` trees expanded, and `crate::`, `super::`
/// and `self::` paths in code.
fn paths(text: &str) -> Vec<String> {
    let stripped = without_inline_modules(text);
    let text = stripped.as_str();
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let tail = &rest[at + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            found.extend(expand(&tail[..end]));
        }
        rest = &tail[end.min(tail.len())..];
    }
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in text.match_indices(start) {
            // `$crate::` is a macro's, resolved where it expands.
            if text[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$')
            {
                continue;
            }
            let path: String = text[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            // `super::{...}` is a group, read with its `use` above.
            let path = path.trim_end_matches(':');
            if path.contains("::") {
                found.push(path.to_owned());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The file `path` names, seen from `module` of the crate in `src`; `None`
/// for another crate's.
fn target(src: &Path, module: &[String], path: &str) -> Option<PathBuf> {
    let mut segments = path.split("::").filter(|s| !s.is_empty()).peekable();
    let mut base: Vec<String> = match *segments.peek()? {
        "crate" => {
            segments.next();
            Vec::new()
        }
        "self" => {
            segments.next();
            module.to_vec()
        }
        "super" => {
            let mut base = module.to_vec();
            while segments.peek() == Some(&"super") {
                segments.next();
                base.pop();
            }
            base
        }
        child => {
            let mut candidate = module.to_vec();
            candidate.push(child.to_owned());
            // A child module, else another crate (or a prelude name).
            file_of(src, &candidate).filter(|file| module_of(src, file) == candidate)?;
            module.to_vec()
        }
    };
    base.extend(segments.map(str::to_owned));
    file_of(src, &base)
}

/// Who imports whom, file by file, in the crate of `src`.
fn imports(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in files {
        if file == src.join("main.rs") {
            continue;
        }
        let module = module_of(src, &file);
        let targets = paths(&code(&file))
            .iter()
            .filter_map(|path| target(src, &module, path))
            .filter(|target| target != &file)
            .collect();
        edges.insert(file, targets);
    }
    edges
}

/// The loops of `edges`: every group of files that reach one another.
fn loops(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<BTreeSet<PathBuf>> {
    let reach = |from: &PathBuf| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&PathBuf> = edges.get(from).into_iter().flatten().collect();
        while let Some(next) = stack.pop() {
            if seen.insert(next.clone()) {
                stack.extend(edges.get(next).into_iter().flatten());
            }
        }
        seen
    };
    let reached: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        edges.keys().map(|file| (file, reach(file))).collect();
    let mut groups: Vec<BTreeSet<PathBuf>> = Vec::new();
    for (file, from_it) in &reached {
        if !from_it.contains(*file) || groups.iter().any(|group| group.contains(*file)) {
            continue;
        }
        let group = from_it
            .iter()
            .filter(|other| reached.get(other).is_some_and(|back| back.contains(*file)))
            .cloned()
            .collect();
        groups.push(group);
    }
    groups
}

#[test]
fn no_file_imports_one_that_imports_it_back_in_any_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for src in CRATES {
        for group in loops(&imports(&root.join(src))) {
            let names: Vec<String> = group
                .iter()
                .map(|file| file.strip_prefix(root).unwrap().display().to_string())
                .collect();
            found.push(names.join(" <-> "));
        }
    }
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn the_check_reads_groups_and_relative_paths_and_sees_a_loop() {
    assert_eq!(
        expand("super::{a, b::{c, self}, d as e}"),
        ["super::a", "super::b::c", "super::b", "super::d"]
    );
    let mut edges = BTreeMap::new();
    let [a, b, c] = ["a.rs", "b.rs", "c.rs"].map(PathBuf::from);
    edges.insert(a.clone(), BTreeSet::from([b.clone()]));
    edges.insert(b.clone(), BTreeSet::from([c.clone()]));
    edges.insert(c.clone(), BTreeSet::from([a.clone()]));
    assert_eq!(loops(&edges), vec![BTreeSet::from([a, b, c])]);
    assert_eq!(
        paths("use crate::x;\nmod tests {\n    use super::*;\n}\nfn f() { crate::y::z() }"),
        ["crate::x", "crate::y::z"]
    );
}
