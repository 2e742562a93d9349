//! The programs a site split across devices is made of (its stages, each stage's length,
//! part and combine programs), each compiled by a backend under an identity of its own.

use crate::backend::{Backend, Captures, CompiledSite, FrontEnd, SiteKey};
use accel_ir::{Expr, Type};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The identity of program `role` of stage `stage` of `site`: one per triple, never a
/// site's own (those are addresses of site descriptions, which never have the top bit).
fn derived_id(site: usize, stage: usize, role: usize) -> usize {
    /// Site, stage and role, with the identity given to them.
    type Ids = HashMap<(usize, usize, usize), usize>;
    static IDS: Mutex<Option<Ids>> = Mutex::new(None);
    let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
    let ids = ids.get_or_insert_with(HashMap::new);
    let next = ids.len() | 1 << (usize::BITS - 1);
    *ids.entry((site, stage, role)).or_insert(next)
}

/// Compiles the programs of one stage of a site: from its front end's captures, plus
/// captures of their own.
pub struct Deriving<'a> {
    pub site: SiteKey,
    pub stage: usize,
    /// The stage's program, captures and result.
    pub front: &'a FrontEnd,
}

impl Deriving<'_> {
    /// `body` (from the stage's captures and `extra`) compiled by `backend` as the stage's
    /// program `role`.
    pub fn on(
        &self,
        backend: &'static dyn Backend,
        role: usize,
        body: &Expr,
        extra: &[(&str, Type)],
        result: Type,
    ) -> Result<Arc<dyn CompiledSite>, String> {
        let mut captures = self.front.captures.clone();
        captures.extend(extra.iter().map(|(n, t)| (n.to_string(), t.clone())));
        let derived = Arc::new(FrontEnd {
            fused: body.clone(),
            captures,
            result,
            program_hash: format!(
                "{}/stage{}/program{role}",
                self.front.program_hash, self.stage
            ),
        });
        let names: Vec<&str> = derived.captures.iter().map(|(n, _)| n.as_str()).collect();
        let types: Vec<Type> = derived.captures.iter().map(|(_, t)| t.clone()).collect();
        // No value is compiled in: one code serves every call.
        let described = Captures {
            names: &names,
            types: &types,
            scalar: &|_| None,
        };
        let key = SiteKey {
            id: derived_id(self.site.id, self.stage, role),
            ..self.site
        };
        let front = || Ok(Arc::clone(&derived));
        backend
            .compiled(key, &described, &derived.result, &front)
            .0
            .map_err(|e| format!("{} cannot compile it: {e}", backend.name()))
    }
}

/// The identity the "not split" notice of `site` is given once for.
pub fn notice_id(site: usize) -> usize {
    derived_id(site, usize::MAX, 0)
}
