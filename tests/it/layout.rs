//! The house is layered, and the layers have no circles.
//!
//! - Crates: each workspace crate depends only on the crates of the layers below it ([`LAYERS`]),
//!   and the engine builds without clap or polars. Cargo refuses a cycle of crates; this keeps the
//!   order itself, so that a new dependency cannot quietly turn two layers around.
//! - Modules: inside each crate, no file imports, through any chain of files, from a file that
//!   imports from it, and the same for its top-level modules: the import graphs have no strongly
//!   connected component of more than one node, so no cycle of any length.
//!
//! A file's imports are the `crate::`, `super::` and `self::` paths it names, in `use`
//! declarations or inline, outside its `#[cfg(test)]` tail; each path leads to the deepest file
//! of the crate it names. Re-exports (`pub use`) are a module's face, not a dependency of its own
//! code, so a parent that re-exports its children is no circle with them. Read from the sources
//! themselves, so a change that closes a circle fails here rather than in a review.

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
fn imports(module: &[String], text: &str) -> Vec<Vec<String>> {
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

/// The workspace's crates, bottom layer first, each with its directory: a crate may depend only on
/// crates before it. ARCHITECTURE.md draws the same order.
const LAYERS: [(&str, &str); 8] = [
    ("fairshare-base", "crates/base"),
    ("fairshare-engine", "crates/engine"),
    ("fairshare-analyses", "crates/analyses"),
    ("fairshare-pictures", "crates/pictures"),
    ("fairshare-frame", "crates/frame"),
    ("fairshare-cli", "."),
    ("data-gen", "data-gen"),
    ("fairshare-python", "python"),
];

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The names of a manifest's normal dependencies (`[dependencies]`, not dev or build ones).
fn normal_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    doc.get("dependencies").and_then(|d| d.as_table()).map(|d| d.keys().cloned().collect()).unwrap_or_default()
}

/// The cycles of `edges`: each strongly connected component of more than one node, its nodes
/// sorted, found by Tarjan's algorithm (iteratively, so a deep graph needs no deep stack).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: Vec<&String> =
        edges.keys().chain(edges.values().flatten()).collect::<BTreeSet<_>>().into_iter().collect();
    let at: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let next: Vec<Vec<usize>> =
        nodes.iter().map(|n| edges.get(*n).map_or_else(Vec::new, |t| t.iter().map(|t| at[t]).collect())).collect();
    let (mut index, mut low, mut on_stack) =
        (vec![usize::MAX; nodes.len()], vec![0; nodes.len()], vec![false; nodes.len()]);
    let (mut stack, mut found, mut counter) = (Vec::new(), Vec::new(), 0);
    for start in 0..nodes.len() {
        if index[start] != usize::MAX {
            continue;
        }
        // (node, how many of its successors were visited)
        let mut walk = vec![(start, 0)];
        index[start] = counter;
        low[start] = counter;
        counter += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut k)) = walk.last_mut() {
            if let Some(&w) = next[v].get(*k) {
                *k += 1;
                if index[w] == usize::MAX {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    walk.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            walk.pop();
            if let Some(&(parent, _)) = walk.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    found.push(component);
                }
            }
        }
    }
    found.sort();
    found
}

/// File-level and top-level-module import graphs of the crate whose sources are `src`.
fn graphs(src: &Path) -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, BTreeSet<String>>) {
    let mut files = Vec::new();
    sources(src, &mut files);
    let (mut by_file, mut by_top) = (BTreeMap::new(), BTreeMap::<String, BTreeSet<String>>::new());
    let is_root = |f: &Path| f.parent() == Some(src) && (f.ends_with("lib.rs") || f.ends_with("main.rs"));
    for file in &files {
        let rel = |f: &Path| f.strip_prefix(src).unwrap().display().to_string();
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let mut targets = BTreeSet::new();
        for path in imports(&module, &text) {
            if let Some(target) = file_of(src, &path).filter(|t| t != file && !is_root(t)) {
                targets.insert(rel(&target));
                if let (Some(a), Some(b)) = (module.first(), path.first())
                    && a != b
                    && !is_root(file)
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
    let found = imports(&module, "use super::lines::{read_lines, LineParser};\nfn f() { crate::io::x(); }");
    assert_eq!(found, [vec!["usage", "lines", "read_lines"], vec!["usage", "lines", "LineParser"], vec!["io", "x"]]);
}

#[test]
fn a_planted_circle_of_three_is_found() {
    let edge = |a: &str, b: &[&str]| (a.to_string(), b.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
    // a -> b -> c -> a, with d hanging off the circle and e -> f -> e beside it.
    let edges = BTreeMap::from([
        edge("a", &["b"]),
        edge("b", &["c", "d"]),
        edge("c", &["a"]),
        edge("d", &[]),
        edge("e", &["f"]),
        edge("f", &["e"]),
    ]);
    assert_eq!(cycles(&edges), [vec!["a", "b", "c"], vec!["e", "f"]]);
    let acyclic = BTreeMap::from([edge("a", &["b", "c"]), edge("b", &["c"]), edge("c", &[])]);
    assert_eq!(cycles(&acyclic), Vec::<Vec<String>>::new());
}

#[test]
fn a_planted_circle_of_three_modules_is_found_in_sources() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b/mod.rs", "pub mod inner;\npub struct B;\n"),
        ("b/inner.rs", "pub fn f() { crate::c::g() }\n"),
        ("c.rs", "pub fn g() { let _ = crate::a::A; }\n#[cfg(test)]\nmod tests { use crate::b::B; }\n"),
    ];
    for (name, text) in files {
        std::fs::create_dir_all(src.join(name).parent().unwrap()).unwrap();
        std::fs::write(src.join(name), text).unwrap();
    }
    let (by_file, by_top) = graphs(src);
    assert_eq!(cycles(&by_top), [vec!["a", "b", "c"]]);
    // File by file the circle is open: a names b/mod.rs, but b/inner.rs names c.
    assert_eq!(cycles(&by_file), Vec::<Vec<String>>::new());
}

/// Every crate's sources, by package name.
fn crate_sources() -> Vec<(&'static str, PathBuf)> {
    LAYERS.iter().map(|(name, dir)| (*name, root().join(dir).join("src"))).collect()
}

#[test]
fn no_crate_has_a_circle_of_files_or_of_top_level_modules() {
    for (name, src) in crate_sources() {
        let (by_file, by_top) = graphs(&src);
        assert!(!by_file.is_empty(), "{name}: the sources were not found in {}", src.display());
        assert_eq!(cycles(&by_file), Vec::<Vec<String>>::new(), "{name}: files in a circle");
        assert_eq!(cycles(&by_top), Vec::<Vec<String>>::new(), "{name}: top-level modules in a circle");
    }
    let (engine_files, engine_top) = graphs(&root().join("crates/engine/src"));
    assert!(engine_files.len() > 50 && engine_top.len() > 5, "the engine's sources were not read");
}

/// The engine's top-level modules in their layer order (ARCHITECTURE.md): each may use only the
/// modules before it.
const ENGINE_ORDER: [&str; 9] = ["config", "tree", "io", "jobs", "usage", "pass", "priority", "output", "pipeline"];

#[test]
fn the_engines_modules_use_only_the_modules_before_them() {
    let (_, by_top) = graphs(&root().join("crates/engine/src"));
    let at = |m: &str| ENGINE_ORDER.iter().position(|o| *o == m);
    for (module, uses) in &by_top {
        let here = at(module).unwrap_or_else(|| panic!("engine module {module} is not in ENGINE_ORDER"));
        for used in uses {
            let there = at(used).unwrap_or_else(|| panic!("engine module {used} is not in ENGINE_ORDER"));
            assert!(there < here, "engine: {module} uses {used}, which comes after it in the layer order");
        }
    }
    assert!(by_top.get("pipeline").is_some_and(|u| u.len() > 5), "the pipeline's imports were not read");
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let members: BTreeSet<String> = {
        let doc: toml::Table = toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
        let members = doc["workspace"]["members"].as_array().unwrap();
        members.iter().map(|m| m.as_str().unwrap().to_string()).collect()
    };
    let listed: BTreeSet<String> = LAYERS.iter().map(|(_, dir)| dir.to_string()).filter(|d| d != "python").collect();
    assert_eq!(members, listed, "every workspace member has its place in LAYERS");
    for (k, (name, dir)) in LAYERS.iter().enumerate() {
        for dep in normal_dependencies(&root().join(dir).join("Cargo.toml")) {
            if let Some(at) = LAYERS.iter().position(|(n, _)| *n == dep) {
                assert!(at < k, "{name} depends on {dep}, which is not below it");
            }
        }
    }
}

#[test]
fn the_engine_and_its_base_build_without_clap_or_polars() {
    for dir in ["crates/base", "crates/engine"] {
        let deps = normal_dependencies(&root().join(dir).join("Cargo.toml"));
        assert!(deps.iter().any(|d| d == "arrow"), "{dir}: its dependencies were not read");
        for dep in &deps {
            assert!(!(dep == "clap" || dep.starts_with("polars")), "{dir} depends on {dep}");
        }
    }
}
