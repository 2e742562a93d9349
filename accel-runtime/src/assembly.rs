//! The assembly of a site's program from the descriptions the macros generate: the site
//! plus exactly the functions it reaches, each once (the paper's Extract), names resolved,
//! the functions' constants turned into captures, checked by classification.

use crate::accel_type::Inspect;
use crate::backend::cache::CompileCache;
use crate::backend::SiteKey;
use crate::site::{FnDesc, SiteDesc};
use accel_ir::passes::{classify, extract, resolve, IrError};
use accel_ir::{FnDef, Program, SiteDef};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

impl FnDesc {
    /// The name that identifies the function in a program: its full path.
    pub fn unique_name(&self) -> String {
        self.path.to_string()
    }
}

impl extract::FnSource for &'static FnDesc {
    fn unique_name(&self) -> String {
        FnDesc::unique_name(self)
    }
    fn load(&self) -> Result<FnDef, IrError> {
        let mut def: FnDef = serde_json::from_str(self.ir).map_err(|e| IrError::Corrupt {
            name: self.unique_name(),
            message: e.to_string(),
        })?;
        def.file = self.file.to_string();
        Ok(def)
    }
    fn callees(&self) -> Vec<(String, Self)> {
        self.callees
            .iter()
            .map(|(w, d)| (w.to_string(), *d))
            .collect()
    }
}

impl SiteDesc {
    /// `src/main.rs:12:5`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column + 1)
    }

    /// The site as backends know it.
    pub(crate) fn key(&'static self) -> SiteKey {
        SiteKey {
            id: self as *const SiteDesc as usize,
            file: self.file,
            line: self.line,
            column: self.column,
        }
    }

    /// The site's program (see [`SiteDesc::program`]), assembled once per process; a
    /// failure is kept as its message.
    pub(crate) fn assembled(&'static self) -> Result<Arc<Program>, String> {
        static ASSEMBLED: CompileCache<usize, Program> = CompileCache::new();
        ASSEMBLED
            .get(self.key().id, || {
                ASSEMBLIES.fetch_add(1, Ordering::Relaxed);
                self.program().map(Arc::new).map_err(|e| e.to_string())
            })
            .0
    }

    /// Assembles the site's program: the site plus exactly the functions it reaches, each
    /// once (extraction), with every name resolved to a unique one, checked by
    /// classification.
    ///
    /// ```
    /// use accel_runtime::prelude::*;
    /// #[accel]
    /// fn sq(x: i64) -> i64 { x * x }
    /// #[accel]
    /// fn sum_sq(xs: &[i64]) -> i64 { reduce(|a, b| a + b, 0, map(sq, xs)) }
    ///
    /// fn main() {
    ///     let v = vec![1i64, 2, 3];
    ///     let p = describe!(sum_sq(&v)).program().unwrap();
    ///     assert_eq!(p.function_names(), vec!["rust_out::sq", "rust_out::sum_sq"]);
    ///     assert_eq!(p.site.captures, vec!["v"]);
    /// }
    /// ```
    pub fn program(&'static self) -> Result<Program, IrError> {
        let mut site: SiteDef = serde_json::from_str(self.ir).map_err(|e| IrError::Corrupt {
            name: format!("accelerate! at {}", self.location()),
            message: e.to_string(),
        })?;
        site.file = self.file.to_string();
        site.loc = accel_ir::Loc {
            line: self.line,
            column: self.column,
        };
        let callees = self
            .callees
            .iter()
            .map(|(w, d)| (w.to_string(), *d))
            .collect();
        let mut program = extract::extract(site, callees)?;
        for f in &mut program.functions {
            *f = resolve::resolve_fn(f)?;
        }
        program.site.body = resolve::resolve_site(&program.site.body).body;
        // Constants named in functions become captures of the site: `path::NAME`.
        let reached = self.reached_functions();
        for f in &mut program.functions {
            if let Some(desc) = reached.iter().find(|d| d.path == f.name) {
                let names: Vec<&str> = desc.consts.iter().map(|(n, _)| *n).collect();
                constants_to_captures(&mut f.body, &f.name, &names);
            }
        }
        program
            .site
            .captures
            .extend(self.constants().iter().map(|(name, _)| name.clone()));
        program.records = self.records.iter().map(|record| record()).collect();
        for f in &reached {
            program
                .records
                .extend(f.records.iter().map(|record| record()));
        }
        classify::classify(&program)?;
        Ok(program)
    }

    /// The functions the site reaches, each once.
    fn reached_functions(&'static self) -> Vec<&'static FnDesc> {
        let mut out: Vec<&'static FnDesc> = Vec::new();
        let mut stack: Vec<&'static FnDesc> = self.callees.iter().map(|(_, d)| *d).collect();
        while let Some(f) = stack.pop() {
            if out.iter().any(|g| g.path == f.path) {
                continue;
            }
            out.push(f);
            stack.extend(f.callees.iter().map(|(_, d)| *d));
        }
        out
    }

    /// The constants the reached functions name, as extra captures (name, value), in the
    /// order the compiled code takes them. Worked out once per site: every call of the
    /// site reads them.
    pub(crate) fn constants(&'static self) -> &'static [(String, &'static (dyn Inspect + Sync))] {
        type Constants = &'static [(String, &'static (dyn Inspect + Sync))];
        type BySite = HashMap<usize, Constants, BuildHasherDefault<rustc_hash::FxHasher>>;
        static BY_SITE: OnceLock<RwLock<BySite>> = OnceLock::new();
        thread_local! {
            // The site this thread asked for last: a site called in a loop.
            static LAST: std::cell::Cell<Option<(usize, Constants)>> =
                const { std::cell::Cell::new(None) };
        }
        let key = self as *const SiteDesc as usize;
        if let Some((k, c)) = LAST.get() {
            if k == key {
                return c;
            }
        }
        let by_site = BY_SITE.get_or_init(Default::default);
        let found = by_site
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if let Some(c) = found {
            LAST.set(Some((key, c)));
            return c;
        }
        let mut sites = by_site.write().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = sites.get(&key) {
            return c;
        }
        let mut out = Vec::new();
        for f in self.reached_functions() {
            for (name, value) in f.consts {
                out.push((format!("{}::{name}", f.path), *value));
            }
        }
        // One small list per site of the program, kept for the process's life.
        let constants: Constants = Box::leak(out.into_boxed_slice());
        sites.insert(key, constants);
        constants
    }
}

/// How many site programs were assembled in this process (tests check they are once per
/// site).
pub(crate) static ASSEMBLIES: AtomicUsize = AtomicUsize::new(0);

/// Replaces the constants `names` in a function body by the captures `function::NAME`.
fn constants_to_captures(e: &mut accel_ir::Expr, function: &str, names: &[&str]) {
    if let accel_ir::Expr::Const(c) = e {
        if names.contains(&c.as_str()) {
            *e = accel_ir::Expr::Var(format!("{function}::{c}"));
            return;
        }
    }
    e.for_each_child_mut(&mut |c| constants_to_captures(c, function, names));
}
