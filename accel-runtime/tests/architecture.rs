//! The architecture, checked: imports between the runtime's files form no cycle and point
//! down the layers (the backend contract, then the backends, then values, sites, the
//! front end, dispatch and the facade); no source file is over 800 lines and no function
//! over 120, in any of the three crates.
//!
//! Imports are read with syn from the sources: every path that starts with `crate::`,
//! `super::` or `self::` (in `use` items and in code) is resolved to the file of the module
//! it names. A `mod` declaration is not an import.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The runtime's top-level modules, lowest layer first. A file may import from its own
/// top-level module and from lower layers only; modules on one layer (the two backends)
/// may not import each other.
const LAYERS: &[&[&str]] = &[
    &["comm"],
    &["backend"],
    &["record"],
    &["error"],
    &["cpu", "cuda"],
    &["report"],
    &["structure"],
    &["accel_type"],
    &["checks"],
    &["tensor"],
    &["seq"],
    &["ops", "chains"],
    &["dist"],
    &["arrays"],
    &["site"],
    &["assembly"],
    &["frontend"],
    &["build"],
    &["mode"],
    &["devices"],
    &["stats"],
    &["dispatch"],
    &["__private"],
];

const MAX_FILE_LINES: usize = 800;
const MAX_FN_LINES: usize = 120;

/// A crate's source files, by module path (`["cpu", "codegen", "num"]`).
struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
}

impl Crate {
    fn load(src: &Path) -> Crate {
        let mut files = BTreeMap::new();
        collect(src, src, &mut files);
        Crate { files }
    }

    /// The file that holds the module at `path`: the longest prefix that is a file module.
    fn file_of(&self, path: &[String]) -> Option<&PathBuf> {
        (0..=path.len())
            .rev()
            .find_map(|k| self.files.get(&path[..k]))
    }
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<Vec<String>, PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under the root");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let last = module.pop().expect("a file name");
            let stem = last.trim_end_matches(".rs");
            if !matches!(stem, "mod" | "lib" | "main") {
                module.push(stem.to_string());
            }
            out.insert(module, p);
        }
    }
}

/// Collects the crate-relative modules a file's paths name.
struct Imports<'a> {
    /// The module the code being visited is in (inline `mod` blocks included).
    module: Vec<String>,
    found: &'a mut BTreeSet<Vec<String>>,
}

impl Imports<'_> {
    /// The absolute path that `segments` (a path as written) names, when it is relative
    /// to the crate.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => self.module.clone(),
            _ => return None,
        };
        let mut rest = if first == "crate" || first == "self" {
            &segments[1..]
        } else {
            segments
        };
        while rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn note(&mut self, segments: Vec<String>) {
        if let Some(abs) = self.absolute(&segments) {
            self.found.insert(abs);
        }
    }
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut p = prefix.clone();
            if n.ident != "self" {
                p.push(n.ident.to_string());
            }
            out.push(p);
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push(p);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_paths(t, prefix, out)),
    }
}

impl<'ast> Visit<'ast> for Imports<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        for p in paths {
            self.note(p);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.note(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    /// `pub(crate)`, `pub(in crate::x)`: visibility, not an import.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }
}

fn parse(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The file-level import graph of a crate: for each file, the files it imports from.
fn import_graph(krate: &Crate) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut graph = BTreeMap::new();
    for (module, file) in &krate.files {
        let mut found = BTreeSet::new();
        Imports {
            module: module.clone(),
            found: &mut found,
        }
        .visit_file(&parse(file));
        let targets: BTreeSet<PathBuf> = found
            .iter()
            .filter_map(|p| krate.file_of(p))
            .filter(|t| *t != file)
            .cloned()
            .collect();
        graph.insert(file.clone(), targets);
    }
    graph
}

/// A cycle of the graph, if it has one.
fn find_cycle(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Option<Vec<PathBuf>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        n: &PathBuf,
        graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        marks: &mut HashMap<PathBuf, Mark>,
        stack: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        match marks.get(n) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let at = stack.iter().position(|s| s == n).unwrap_or(0);
                let mut cycle = stack[at..].to_vec();
                cycle.push(n.clone());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(n.clone(), Mark::Open);
        stack.push(n.clone());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, marks, stack) {
                return Some(c);
            }
        }
        stack.pop();
        marks.insert(n.clone(), Mark::Done);
        None
    }
    let mut marks = HashMap::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut marks, &mut Vec::new()))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn crate_sources() -> Vec<PathBuf> {
    ["accel-ir/src", "accel-macros/src", "accel-runtime/src"]
        .iter()
        .map(|c| workspace().join(c))
        .collect()
}

fn show(files: &[PathBuf]) -> String {
    let root = workspace();
    files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn imports_between_files_form_no_cycle() {
    for src in crate_sources() {
        let krate = Crate::load(&src);
        let graph = import_graph(&krate);
        if let Some(cycle) = find_cycle(&graph) {
            panic!("an import cycle: {}", show(&cycle));
        }
    }
}

#[test]
fn the_runtime_imports_point_down_the_layers() {
    let src = workspace().join("accel-runtime/src");
    let krate = Crate::load(&src);
    let layer = |module: &[String]| -> Option<usize> {
        let top = module.first()?;
        LAYERS.iter().position(|l| l.contains(&top.as_str()))
    };
    let module_of: HashMap<&PathBuf, &Vec<String>> =
        krate.files.iter().map(|(m, f)| (f, m)).collect();
    let mut wrong = Vec::new();
    for (file, targets) in import_graph(&krate) {
        let from = module_of[&file];
        let Some(from_layer) = layer(from) else {
            continue; // lib.rs: the facade re-exports everything.
        };
        for t in targets {
            let to = module_of[&t];
            if to.first() == from.first() {
                continue;
            }
            match layer(to) {
                Some(l) if l < from_layer => {}
                _ => wrong.push(show(&[file.clone(), t.clone()])),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not point down the layers:\n{}",
        wrong.join("\n")
    );
    // Every top-level module has its layer.
    for module in krate.files.keys() {
        if let Some(top) = module.first() {
            assert!(
                layer(module).is_some(),
                "the module `{top}` has no layer in LAYERS"
            );
        }
    }
}

/// The functions of a file with their first and last lines.
struct Functions(Vec<(String, usize, usize)>);

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.note(&f.sig.ident, f.block.brace_token.span.join());
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.note(&f.sig.ident, f.block.brace_token.span.join());
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.note(&f.sig.ident, b.brace_token.span.join());
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

impl Functions {
    fn note(&mut self, name: &syn::Ident, body: proc_macro2::Span) {
        let first = name.span().start().line;
        self.0.push((name.to_string(), first, body.end().line));
    }
}

#[test]
fn no_file_over_800_lines_and_no_function_over_120() {
    let mut wrong = Vec::new();
    let mut dirs = crate_sources();
    dirs.push(workspace().join("accel-runtime/tests"));
    for dir in dirs {
        let mut files = BTreeMap::new();
        collect(&dir, &dir, &mut files);
        for file in files.values() {
            let text = std::fs::read_to_string(file).expect("a source file");
            let lines = text.lines().count();
            if lines > MAX_FILE_LINES {
                wrong.push(format!(
                    "{}: {lines} lines",
                    show(std::slice::from_ref(file))
                ));
            }
            let mut fns = Functions(Vec::new());
            fns.visit_file(&parse(file));
            for (name, first, last) in fns.0 {
                if last - first + 1 > MAX_FN_LINES {
                    wrong.push(format!(
                        "{}:{first}: fn {name} has {} lines",
                        show(std::slice::from_ref(file)),
                        last - first + 1
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "too long:\n{}", wrong.join("\n"));
}

#[test]
fn the_checks_see_what_they_check() {
    // Guards against a checker that finds nothing: the runtime has its layers' files, the
    // CPU code generator imports the contract, and a long function would be seen.
    let krate = Crate::load(&workspace().join("accel-runtime/src"));
    assert!(krate.files.len() > 40, "{} files", krate.files.len());
    let graph = import_graph(&krate);
    let num = workspace().join("accel-runtime/src/cpu/codegen/num.rs");
    let cx = workspace().join("accel-runtime/src/cpu/codegen/cx.rs");
    assert!(graph[&num].contains(&cx), "{:?}", graph[&num]);
    let mut cyclic = graph.clone();
    cyclic.entry(cx.clone()).or_default().insert(num.clone());
    assert!(find_cycle(&cyclic).is_some());
    let long = format!("fn f() {{\n{}}}\n", "    let _ = 1;\n".repeat(130));
    let mut fns = Functions(Vec::new());
    fns.visit_file(&syn::parse_file(&long).expect("valid Rust"));
    assert_eq!(fns.0, vec![("f".to_string(), 1, 132)]);
}
