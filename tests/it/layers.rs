//! The house's `use` lines, read from `src/`: the top-level modules import each other without
//! a circle (the registry of kinds is the commands' own, and `report/` gets its parts handed
//! in), and the dispatcher prints nothing itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file as the build sees it outside tests: its text before its first
/// `#[cfg(test)]`, without comment lines.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level module of a file of `src/` (`report` for `src/report/html.rs`), and the
/// top-level modules its code names as `crate::<module>`, itself left out.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let top = first.to_string_lossy().trim_end_matches(".rs").to_owned();
        let code = code(&file);
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && name != top {
                edges.entry(top.clone()).or_default().insert(name);
            }
        }
    }
    edges
}

/// A circle of imports through `from`, as the modules on it, if there is one.
fn circle_through(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut path = vec![from.to_owned()];
    let mut seen = BTreeSet::new();
    fn walk(
        edges: &BTreeMap<String, BTreeSet<String>>,
        from: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let here = path.last().unwrap().clone();
        for next in edges.get(&here).into_iter().flatten() {
            if next == from {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(edges, from, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(edges, from, &mut path, &mut seen).then_some(path)
}

#[test]
fn the_top_level_modules_import_each_other_without_a_circle() {
    let edges = imports();
    assert!(
        edges.get("commands").is_some_and(|e| e.contains("bench")),
        "the scan reads the imports: {edges:?}"
    );
    let circles: Vec<Vec<String>> = edges
        .keys()
        .filter_map(|module| circle_through(&edges, module))
        .collect();
    assert!(circles.is_empty(), "import circles: {circles:?}");
}

#[test]
fn the_dispatcher_prints_nothing_itself() {
    // Its notes go to the callback its runtime hands it (`dispatch::Notes`).
    let edges = imports();
    let dispatch = edges.get("dispatch").cloned().unwrap_or_default();
    assert!(
        dispatch.contains("store"),
        "the scan reads it: {dispatch:?}"
    );
    assert!(!dispatch.contains("output"), "{dispatch:?}");
}
