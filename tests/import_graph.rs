//! The modules under `src/` import one another one way: no circle.
//!
//! Reads every `.rs` file under `src/`, takes the `crate::…` paths (and a
//! `super::` that climbs to the crate root) outside comments, strings and
//! test code, and builds the graph of top-level modules: `src/a.rs` and
//! everything under `src/a/` are the module `a`. A name the crate root
//! re-exports (`crate::Request`) counts as the module it comes from. Any
//! strongly connected set of two or more modules fails the test, which
//! prints each of its edges with the line that makes it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn src_modules_import_one_another_without_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::of_crate(&root, false);
    assert!(graph.modules.len() > 20, "found only {:?} under {}", graph.modules, root.display());
    if std::env::var_os("DUMP").is_some() {
        for ((a, b), p) in &graph.edges {
            eprintln!("EDGE {a} {b} {p}");
        }
    }
    let circles = graph.circles();
    assert!(circles.is_empty(), "import cycles among src modules:\n{}", graph.describe(&circles));
}

/// The modules whose imports the check with test code leaves out: what
/// every module's tests may use.
const TEST_SUPPORT: &[&str] = &["test", "request_fixture"];

/// With test code counted too: a module's tests use its own and lower
/// modules, and the test-support ones, never one above it.
#[test]
fn src_modules_and_their_tests_import_one_another_without_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::of_crate(&root, true);
    let circles = graph.circles();
    assert!(circles.is_empty(), "import cycles among src modules, tests counted:\n{}", graph.describe(&circles));
}

#[test]
fn a_cycle_is_found_and_test_code_comments_and_strings_are_not_imports() {
    let mut graph = Graph::default();
    for name in ["a", "b", "c", "d"] {
        graph.modules.insert(name.to_string());
    }
    let exports = BTreeMap::from([("Thing".to_string(), "c".to_string())]);
    let a = "use crate::{b::X, d};\n// crate::c\nconst S: &str = \"crate::c\";\n";
    let b = "use crate::Thing;\nfn f<'a>(c: char) -> bool { c == '\"' }\n";
    let c = "#[cfg(test)]\nmod tests {\n    use crate::d;\n}\nfn g() { crate::a::h() }\n";
    let d = "#[cfg(test)]\nuse crate::a;\n";
    for (name, text) in [("a", a), ("b", b), ("c", c), ("d", d)] {
        graph.add_file(name, 1, Path::new(name), text, &exports);
    }
    let edges: Vec<_> = graph.edges.keys().cloned().collect();
    let expected = [("a", "b"), ("a", "d"), ("b", "c"), ("c", "a")];
    assert_eq!(edges, expected.map(|(x, y)| (x.to_string(), y.to_string())));
    let circles = graph.circles();
    assert_eq!(circles, [vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
}

#[derive(Default)]
struct Graph {
    /// Whether test code counts too (`#[cfg(test)]` items and test files);
    /// imports of the test-support modules (the test client, the request
    /// fixture) still do not: every module's tests may use them.
    with_tests: bool,
    modules: BTreeSet<String>,
    /// `(from, to)` → where the import is, one place for each.
    edges: BTreeMap<(String, String), String>,
}

impl Graph {
    fn of_crate(src: &Path, with_tests: bool) -> Graph {
        let mut graph = Graph { with_tests, ..Graph::default() };
        let mut files = Vec::new();
        for entry in fs::read_dir(src).expect("src/ is readable") {
            let path = entry.expect("a src/ entry").path();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            if path.is_dir() {
                graph.modules.insert(stem.clone());
                collect(&path, &stem, 2, &mut files);
            } else if path.extension().is_some_and(|e| e == "rs") && stem != "lib" {
                graph.modules.insert(stem.clone());
                files.push((stem, 1, path));
            }
        }
        let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs is readable");
        let lib = Code::strip(&lib);
        let test_modules = test_modules(&lib);
        let exports = reexports(&lib, &graph.modules);
        graph.modules.retain(|m| !(test_modules.contains(m) || (with_tests && TEST_SUPPORT.contains(&m.as_str()))));
        let test_files: Vec<PathBuf> = files.iter().flat_map(|(_, _, path)| test_children(path)).collect();
        for (module, to_root, path) in files {
            let test_code = test_modules.contains(&module) || test_files.iter().any(|t| path.starts_with(t));
            if (test_code && !with_tests) || !graph.modules.contains(&module) {
                continue;
            }
            let text = fs::read_to_string(&path).expect("a source file is readable");
            let shown = path.strip_prefix(src.parent().unwrap_or(src)).unwrap_or(&path);
            graph.add_file(&module, to_root, shown, &text, &exports);
        }
        graph
    }

    /// Adds the edges of one file of `module`; `to_root` is how many
    /// `super::` climb from the file to the crate root.
    fn add_file(&mut self, module: &str, to_root: usize, path: &Path, text: &str, exports: &BTreeMap<String, String>) {
        let code = if self.with_tests { Code::strip(text) } else { Code::strip(text).without_test_items() };
        let text = code.text.as_str();
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let mut names = Vec::new();
            if starts_word(bytes, at, "crate::") {
                at += "crate::".len();
                first_segments(&text[at..], &mut names);
            } else if starts_word(bytes, at, "super::") {
                let mut supers = 0;
                while text[at..].starts_with("super::") {
                    supers += 1;
                    at += "super::".len();
                }
                if supers >= to_root {
                    first_segments(&text[at..], &mut names);
                }
            } else {
                at += text[at..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            for name in names {
                let target = if self.modules.contains(&name) { Some(name) } else { exports.get(&name).cloned() };
                if let Some(target) = target.filter(|t| t != module) {
                    let line = text[..at].matches('\n').count() + 1;
                    let place = format!("{}:{line}", path.display());
                    self.edges.entry((module.to_string(), target)).or_insert(place);
                }
            }
        }
    }

    /// Every strongly connected set of two or more modules (Tarjan),
    /// each sorted, the sets in order.
    fn circles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.modules.iter().collect();
        let index_of = |m: &String| names.iter().position(|n| *n == m);
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
        for (from, to) in self.edges.keys() {
            if let (Some(f), Some(t)) = (index_of(from), index_of(to)) {
                next[f].push(t);
            }
        }
        let mut tarjan =
            Tarjan { next: &next, index: vec![None; names.len()], low: vec![0; names.len()], ..Default::default() };
        for v in 0..names.len() {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut circles: Vec<Vec<String>> = tarjan
            .sets
            .into_iter()
            .filter(|set| set.len() > 1)
            .map(|set| {
                let mut set: Vec<String> = set.into_iter().map(|v| names[v].clone()).collect();
                set.sort();
                set
            })
            .collect();
        circles.sort();
        circles
    }

    fn describe(&self, circles: &[Vec<String>]) -> String {
        let mut out = String::new();
        for set in circles {
            out += &format!("  {} modules: {}\n", set.len(), set.join(", "));
            for ((from, to), place) in &self.edges {
                if set.contains(from) && set.contains(to) {
                    out += &format!("    {from} -> {to}  ({place})\n");
                }
            }
        }
        out
    }
}

#[derive(Default)]
struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: BTreeSet<usize>,
    counter: usize,
    sets: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack.insert(v);
        for &w in &self.next[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack.contains(&w) => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut set = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                set.push(w);
                if w == v {
                    break;
                }
            }
            self.sets.push(set);
        }
    }
}

/// The files under `dir`, each with the `super::` count from it to the
/// crate root (`to_root` for a file right in `dir`, one less for its
/// `mod.rs`).
fn collect(dir: &Path, module: &str, to_root: usize, files: &mut Vec<(String, usize, PathBuf)>) {
    for entry in fs::read_dir(dir).expect("a src/ directory is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(&path, module, to_root + 1, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let own = path.file_name().is_some_and(|n| n == "mod.rs");
            files.push((module.to_string(), if own { to_root - 1 } else { to_root }, path));
        }
    }
}

/// Source text with comments blanked and string and char literals
/// emptied; line breaks kept, so line numbers still hold.
struct Code {
    text: String,
}

impl Code {
    fn strip(text: &str) -> Code {
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        let keep_lines = |out: &mut String, skipped: &[char]| {
            out.extend(skipped.iter().filter(|c| **c == '\n'));
        };
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            if c == '/' && next == Some('/') {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            } else if c == '/' && next == Some('*') {
                let start = i;
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                keep_lines(&mut out, &chars[start..i.min(chars.len())]);
            } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_prefix(&chars, i) {
                let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
                if chars.get(i + 1 + hashes) != Some(&'"') {
                    out.push(c);
                    i += 1;
                    continue;
                }
                let start = i;
                i += hashes + 2;
                while i < chars.len()
                    && !(chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes)
                {
                    i += 1;
                }
                i = (i + 1 + hashes).min(chars.len());
                out.push_str("\"\"");
                keep_lines(&mut out, &chars[start..i]);
            } else if c == '"' {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i = (i + 1).min(chars.len());
                out.push_str("\"\"");
                keep_lines(&mut out, &chars[start..i]);
            } else if c == '\'' && next == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        }
        Code { text: out }
    }

    /// The text without the items under a `#[cfg(…)]` that needs `test`
    /// (a `mod tests { … }`, a `#[cfg(test)] mod x;`, a test-only `use`).
    fn without_test_items(self) -> Code {
        let text = self.text;
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < bytes.len() {
            if text[i..].starts_with("#[cfg(") {
                let end = i + text[i..].find(']').map_or(bytes.len() - i, |e| e + 1);
                let attr = &text[i..end];
                if needs_test(attr) {
                    let item_end = item_end(bytes, end);
                    out.extend(text[i..item_end].chars().filter(|c| *c == '\n'));
                    i = item_end;
                    continue;
                }
            }
            let c = text[i..].chars().next().expect("inside the text");
            out.push(c);
            i += c.len_utf8();
        }
        Code { text: out }
    }
}

/// Whether the `r` at `i` begins a raw string (`r"`, `br"`), not a name.
fn raw_prefix(chars: &[char], i: usize) -> bool {
    let ident = |j: usize| chars[j].is_alphanumeric() || chars[j] == '_';
    i == 0 || !ident(i - 1) || chars[i - 1] == 'b' && (i == 1 || !ident(i - 2))
}

/// Whether a `#[cfg(…)]` holds only where `test` is set.
fn needs_test(attr: &str) -> bool {
    let words: Vec<&str> = attr.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
    words.contains(&"test") && !words.contains(&"not") && !words.contains(&"any")
}

/// Where the item starting at `from` ends: past its `;` (or `,`, for a
/// field), past the brace closing its first block, or before the brace
/// closing the block it is in, whichever comes first.
fn item_end(bytes: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'(' => depth += 1,
            b']' | b')' => depth = depth.saturating_sub(1),
            b';' | b',' if depth == 0 => return i + 1,
            b'}' if depth == 0 => return i,
            b'{' if depth == 0 => {
                let mut braces = 0usize;
                while i < bytes.len() {
                    match bytes[i] {
                        b'{' => braces += 1,
                        b'}' => {
                            braces -= 1;
                            if braces == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return bytes.len();
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

fn starts_word(bytes: &[u8], at: usize, word: &str) -> bool {
    bytes[at..].starts_with(word.as_bytes())
        && (at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b'$'))
}

/// The first segment of each path after `crate::`: one name, or each name
/// at the top of a `{…}` group.
fn first_segments(rest: &str, names: &mut Vec<String>) {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0usize;
        let mut start = true;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => start = true,
                c if c.is_whitespace() => {}
                _ if start && depth == 0 => {
                    names.push(ident(&group[i..]));
                    start = false;
                }
                _ => {}
            }
        }
    } else {
        names.push(ident(rest));
    }
    names.retain(|n| !n.is_empty() && n != "self");
}

fn ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The files of the modules `path` declares only under a `cfg` needing
/// `test` (`#[cfg(test)] mod tests;` in `src/a.rs` is `src/a/tests.rs`, or
/// everything under `src/a/tests/`).
fn test_children(path: &Path) -> Vec<PathBuf> {
    let text = fs::read_to_string(path).expect("a source file is readable");
    let dir = match path.file_name() {
        Some(n) if n == "mod.rs" => path.parent().map(Path::to_path_buf),
        _ => path.parent().zip(path.file_stem()).map(|(p, s)| p.join(s)),
    };
    let Some(dir) = dir else { return Vec::new() };
    let names = test_modules(&Code::strip(&text));
    names.iter().flat_map(|name| [dir.join(format!("{name}.rs")), dir.join(name)]).collect()
}

/// The modules a file declares only under a `cfg` needing `test`.
fn test_modules(lib: &Code) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let text = &lib.text;
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(") {
        let at = from + at;
        let end = at + text[at..].find(']').unwrap_or(0) + 1;
        if needs_test(&text[at..end]) {
            let item = &text[end..item_end(text.as_bytes(), end)];
            if let Some(name) = item.trim_start().strip_prefix("mod ") {
                found.insert(ident(name.trim_start()));
            }
        }
        from = end;
    }
    found
}

/// Names the crate root re-exports (`pub use m::{A, B as C}`), each to the
/// module it comes from.
fn reexports(lib: &Code, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for statement in lib.text.split(';') {
        let Some(at) = statement.find("use ") else { continue };
        let path = statement[at + "use ".len()..].trim_start();
        let module = ident(path);
        if !modules.contains(&module) {
            continue;
        }
        let words = path[module.len()..].split(|c: char| !(c.is_alphanumeric() || c == '_'));
        for word in words.filter(|w| !w.is_empty() && *w != "self" && *w != "as") {
            map.entry(word.to_string()).or_insert_with(|| module.clone());
        }
    }
    map
}
