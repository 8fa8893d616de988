//! The house has no circles: no file of `src` imports from a file that imports from it, and no
//! top-level module from one that imports from it. Read from the sources themselves, so a change
//! that closes a circle fails here rather than in a review.
//!
//! A file's imports are the `crate::`, `super::` and (in the binary) `fairshare::` paths it names,
//! in `use` declarations or inline, outside its `#[cfg(test)]` tail; each path leads to the
//! deepest file of `src` it names. Re-exports (`pub use`) are a module's face, not a dependency
//! of its own code, so a parent that re-exports its children is no circle with them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file (`src/usage/sacct.rs` → `usage::sacct`; `mod.rs` is its directory).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The file a module path names: the deepest prefix that is a file of `src`.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    let mut found = None;
    let mut dir = src.to_path_buf();
    for seg in path {
        let (file, sub) = (dir.join(format!("{seg}.rs")), dir.join(seg));
        if file.is_file() {
            found = Some(file);
        } else if sub.join("mod.rs").is_file() {
            found = Some(sub.join("mod.rs"));
        } else {
            break;
        }
        dir = sub;
    }
    found
}

/// `use` trees expanded into paths: `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else { return vec![tree.to_string()] };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
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
    parts.into_iter().filter(|p| !p.trim().is_empty()).flat_map(|p| expand(&format!("{prefix}{}", p.trim()))).collect()
}

/// The paths a file's code names, made absolute (`crate::...`), without re-exports.
fn imports(module: &[String], text: &str, binary: bool) -> Vec<Vec<String>> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap()
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = Vec::new();
    let mut inline = String::new();
    let mut rest = code.as_str();
    // `use` declarations, possibly over several lines; `pub use` ones are skipped.
    while let Some(at) = rest.find("use ") {
        let line_start = rest[..at].rfind('\n').map_or(0, |i| i + 1);
        let head = rest[line_start..at].trim();
        if !(head.is_empty() || head.starts_with("pub")) {
            // `use` inside a line of code (a word ending in "use"): not a declaration.
            inline.push_str(&rest[..at + 4]);
            rest = &rest[at + 4..];
            continue;
        }
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        inline.push_str(&rest[..line_start]);
        if !head.starts_with("pub") || head.starts_with("pub(") {
            paths.extend(expand(&rest[at + 4..end]));
        }
        rest = &rest[(end + 1).min(rest.len())..];
    }
    inline.push_str(rest);
    // Inline paths: `crate::io::flux_db::read(...)`.
    let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut start = None;
    for (i, c) in inline.char_indices().chain(std::iter::once((inline.len(), ' '))) {
        match (start, is_path(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                paths.push(inline[s..i].trim_end_matches(':').to_string());
                start = None;
            }
            _ => {}
        }
    }
    paths
        .into_iter()
        .filter_map(|p| {
            let mut segs = p.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "*");
            let mut abs: Vec<String> = match segs.next()? {
                "crate" => Vec::new(),
                "fairshare" if binary => Vec::new(),
                "self" => module.to_vec(),
                "super" => module[..module.len().saturating_sub(1)].to_vec(),
                _ => return None,
            };
            for s in segs {
                match s {
                    "super" => {
                        abs.pop();
                    }
                    "self" => {}
                    _ => abs.push(s.split_whitespace().next().unwrap_or(s).to_string()),
                }
            }
            Some(abs)
        })
        .collect()
}

/// The cycles of length two in `edges` (a → b and b → a), each once.
fn two_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (a, targets) in edges {
        for b in targets {
            if a < b && edges.get(b).is_some_and(|t| t.contains(a)) {
                found.push(format!("{a} <-> {b}"));
            }
        }
    }
    found
}

/// File-level and top-level-module import graphs of `src`.
fn graphs() -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, BTreeSet<String>>) {
    // Another tree's sources can be checked too (the checker's own check, on an older commit).
    let src = std::env::var_os("FAIRSHARE_LAYOUT_SRC")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), PathBuf::from);
    let mut files = Vec::new();
    sources(&src, &mut files);
    let (mut by_file, mut by_top) = (BTreeMap::new(), BTreeMap::<String, BTreeSet<String>>::new());
    for file in &files {
        let rel = |f: &Path| f.strip_prefix(&src).unwrap().display().to_string();
        let module = module_of(&src, file);
        let binary = module.first().is_some_and(|m| m == "cli") || file.ends_with("main.rs");
        let text = std::fs::read_to_string(file).unwrap();
        let mut targets = BTreeSet::new();
        for path in imports(&module, &text, binary) {
            // The binary's own modules live under `cli`; `fairshare::` is the library.
            if let Some(target) = file_of(&src, &path).filter(|t| t != file && !t.ends_with("lib.rs")) {
                targets.insert(rel(&target));
                if let (Some(a), Some(b)) = (module.first(), path.first())
                    && a != b
                    && !file.ends_with("lib.rs")
                {
                    by_top.entry(a.clone()).or_default().insert(b.clone());
                }
            }
        }
        by_file.insert(rel(file), targets);
    }
    (by_file, by_top)
}

#[test]
fn use_trees_expand() {
    assert_eq!(expand("crate::a::{b, c::{d, e}}"), ["crate::a::b", "crate::a::c::d", "crate::a::c::e"]);
    let module = vec!["usage".to_string(), "sacct".to_string()];
    let found = imports(&module, "use super::lines::{read_lines, LineParser};\nfn f() { crate::io::x(); }", false);
    assert_eq!(found, [vec!["usage", "lines", "read_lines"], vec!["usage", "lines", "LineParser"], vec!["io", "x"]]);
}

#[test]
fn a_planted_circle_is_found() {
    let mut edges = BTreeMap::new();
    edges.insert("a.rs".to_string(), BTreeSet::from(["b.rs".to_string()]));
    edges.insert("b.rs".to_string(), BTreeSet::from(["c.rs".to_string(), "a.rs".to_string()]));
    edges.insert("c.rs".to_string(), BTreeSet::new());
    assert_eq!(two_cycles(&edges), ["a.rs <-> b.rs"]);
}

#[test]
fn no_file_imports_from_a_file_that_imports_from_it() {
    let (by_file, _) = graphs();
    assert!(by_file.len() > 50, "the sources were not found");
    assert_eq!(two_cycles(&by_file), Vec::<String>::new());
}

#[test]
fn no_top_level_module_imports_from_one_that_imports_from_it() {
    let (_, by_top) = graphs();
    assert_eq!(two_cycles(&by_top), Vec::<String>::new());
}
