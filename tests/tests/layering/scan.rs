//! The source scan under the layering rules: the `adk` files, their code without comments,
//! strings and test items, the paths in that code, and what each path imports.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

pub(super) fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../adk/src")
}

/// Every `.rs` file under `dir`, as paths relative to `dir`, sorted.
pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).unwrap_or_else(|error| panic!("{next:?}: {error}")) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    files.sort();
    files
}

pub(super) fn slash(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The source without comments (doc comments included), with string and character literals
/// emptied, so only code is left. Line breaks are kept.
pub(super) fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    while at < bytes.len() {
        let rest = &source[at..];
        if rest.starts_with("//") {
            at += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while at < bytes.len() {
                let rest = &source[at..];
                if rest.starts_with("/*") {
                    depth += 1;
                    at += 2;
                } else if rest.starts_with("*/") {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if bytes[at] == b'\n' {
                        out.push('\n');
                    }
                    at += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(source, at) {
            let open = 2 + hashes;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = source[at + open..]
                .find(&close)
                .map_or(bytes.len(), |end| at + open + end + close.len());
            out.push_str("\"\"");
            out.extend(source[at..end].chars().filter(|&c| c == '\n'));
            at = end;
        } else if bytes[at] == b'"' {
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            out.extend(
                source[at..end.min(bytes.len())]
                    .chars()
                    .filter(|&c| c == '\n'),
            );
            at = end + 1;
        } else if let Some(length) = char_literal(rest) {
            out.push_str("' '");
            at += length;
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, … at `at` (not the end of an identifier): how many `#`s.
pub(super) fn raw_string_start(source: &str, at: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    if bytes[at] != b'r'
        || (at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_'))
    {
        return None;
    }
    let hashes = bytes[at + 1..].iter().take_while(|&&b| b == b'#').count();
    (bytes.get(at + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The length of a character literal at the start of `rest` (not a lifetime).
pub(super) fn char_literal(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let (_, first) = chars.next()?;
    if first == '\\' {
        let close = rest[2..].find('\'')?;
        return Some(close + 3);
    }
    let (index, second) = chars.next()?;
    (second == '\'').then_some(index + 1)
}

/// The code without its `#[cfg(test)]` items (a module, a function, an `impl`).
pub(super) fn without_tests(code: &str) -> String {
    let mut code = code.to_owned();
    while let Some(start) = code.find("#[cfg(test)]") {
        let after = start + "#[cfg(test)]".len();
        let Some(open) = code[after..].find(['{', ';']).map(|offset| after + offset) else {
            break;
        };
        let end = if code.as_bytes()[open] == b';' {
            open + 1
        } else {
            let mut depth = 0;
            let mut end = code.len();
            for (offset, c) in code[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + offset + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        };
        let lines = code[start..end].matches('\n').count();
        code.replace_range(start..end, &"\n".repeat(lines));
    }
    code
}

/// The module path of a file: `context/turn.rs` is `[context, turn]`, `context/mod.rs`
/// `[context]`, `lib.rs` `[]`.
pub(super) fn module_path(file: &str) -> Vec<String> {
    let mut segments: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if segments
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        segments.pop();
    }
    segments
}

/// Every path after `crate::`, `super::` or `self::` in `code`, with `{..}` groups expanded,
/// as the anchor and the segments that follow.
pub(super) fn paths(code: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut found = Vec::new();
    for anchor in ["crate", "super", "self"] {
        let needle = format!("{anchor}::");
        let mut from = 0;
        while let Some(offset) = code[from..].find(&needle) {
            let start = from + offset;
            from = start + needle.len();
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tail = path_text(&code[from..]);
            let anchor = match anchor {
                "crate" => "crate",
                "super" => "super",
                _ => "self",
            };
            for segments in expand(&tail) {
                found.push((anchor, segments));
            }
        }
    }
    found
}

/// The path text from the start of `rest`: segments, `::`, and balanced `{..}` groups.
pub(super) fn path_text(rest: &str) -> String {
    let mut depth = 0;
    let mut end = 0;
    for (index, c) in rest.char_indices() {
        let keeps = c.is_alphanumeric()
            || c == '_'
            || c == ':'
            || c == '*'
            || (depth > 0 && (c == ',' || c.is_whitespace()));
        if c == '{' {
            depth += 1;
        } else if c == '}' {
            if depth == 0 {
                break;
            }
            depth -= 1;
        } else if !keeps {
            break;
        }
        end = index + c.len_utf8();
    }
    rest[..end].chars().filter(|c| !c.is_whitespace()).collect()
}

/// `a::{b::c,d}` as `[[a, b, c], [a, d]]`.
pub(super) fn expand(text: &str) -> Vec<Vec<String>> {
    let Some(open) = text.find('{') else {
        return vec![
            text.split("::")
                .filter(|segment| !segment.is_empty())
                .map(str::to_owned)
                .collect(),
        ];
    };
    let head: Vec<String> = text[..open]
        .split("::")
        .filter(|segment| !segment.is_empty())
        .map(str::to_owned)
        .collect();
    let body = &text[open + 1..text.rfind('}').unwrap_or(text.len())];
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in body.chars() {
        match c {
            ',' if depth == 0 => parts.push(std::mem::take(&mut current)),
            '{' => {
                depth += 1;
                current.push(c);
            }
            '}' => {
                depth -= 1;
                current.push(c);
            }
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts
        .iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand(part))
        .map(|tail| head.iter().cloned().chain(tail).collect())
        .collect()
}

/// The file a module path lands in: the longest prefix that is a module with a file.
pub(super) fn resolve(src: &Path, segments: &[String]) -> String {
    let mut dir = src.to_path_buf();
    let mut file = "lib.rs".to_owned();
    let mut relative = String::new();
    for segment in segments {
        let flat = dir.join(format!("{segment}.rs"));
        let folder = dir.join(segment).join("mod.rs");
        relative = if relative.is_empty() {
            segment.clone()
        } else {
            format!("{relative}/{segment}")
        };
        if flat.is_file() {
            file = format!("{relative}.rs");
        } else if folder.is_file() {
            file = format!("{relative}/mod.rs");
        } else if !dir.join(segment).is_dir() {
            break;
        }
        dir = dir.join(segment);
    }
    file
}

/// The imports of every file of `adk/src` (file → files it imports).
pub(super) fn file_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = src();
    let mut imports = BTreeMap::new();
    for file in rust_files(&src) {
        let name = slash(&file);
        let source = fs::read_to_string(src.join(&file)).expect("a readable source file");
        let code = without_tests(&code_only(&source));
        let here = module_path(&name);
        // `super` of `context/turn.rs` ([context, turn]) and of `context/mod.rs` ([context])
        // alike is the path without its last segment.
        let parent: Vec<String> = here[..here.len().saturating_sub(1)].to_vec();
        let mut targets = BTreeSet::new();
        for (anchor, segments) in paths(&code) {
            let mut full = match anchor {
                "crate" => Vec::new(),
                "super" => parent.clone(),
                _ => here.clone(),
            };
            for segment in segments {
                if segment == "super" {
                    full.pop();
                } else if segment != "self" && segment != "*" {
                    full.push(segment);
                }
            }
            let target = resolve(&src, &full);
            if target != name {
                targets.insert(target);
            }
        }
        imports.insert(name, targets);
    }
    imports
}

/// The top-level module a file belongs to; `__private/<x>.rs` belongs to `x`.
pub(super) fn module_of(file: &str) -> String {
    let first = file.split('/').next().expect("a path");
    if first == "__private" {
        let served = file
            .trim_start_matches("__private/")
            .trim_end_matches(".rs");
        return match served {
            "middleware" => "pipeline".to_owned(),
            "state_writes" => "runner".to_owned(),
            other => other.to_owned(),
        };
    }
    first.trim_end_matches(".rs").to_owned()
}

/// Module → modules it imports (the root, `lib.rs`, left out).
pub(super) fn module_imports(
    files: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, targets) in files {
        if file == "lib.rs" {
            continue;
        }
        let from = module_of(file);
        let entry = modules.entry(from.clone()).or_default();
        for target in targets {
            let to = module_of(target);
            if to != from && to != "lib" {
                entry.insert(to);
            }
        }
    }
    modules
}

/// The groups of two or more files that import each other, directly or through others
/// (Tarjan's strongly connected components).
pub(super) fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Search<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        groups: Vec<Vec<String>>,
    }
    impl<'g> Search<'g> {
        fn visit(&mut self, node: &'g str) {
            let at = self.index.len();
            self.index.insert(node, at);
            self.low.insert(node, at);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    group.push(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for node in graph.keys() {
        if !search.index.contains_key(node.as_str()) {
            search.visit(node);
        }
    }
    search.groups
}
