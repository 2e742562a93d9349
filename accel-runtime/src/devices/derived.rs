//! The programs a site split across devices is made of (its stages, each stage's length,
//! part and combine programs), each compiled by a backend under an identity of its own,
//! and the captures they run on.

use crate::backend::abi::Marshal;
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
            row_layout: &|_| (0, Vec::new()),
        };
        let key = SiteKey {
            id: derived_id(self.site.id, self.stage, role),
            ..self.site
        };
        let front = || Ok(Arc::clone(&derived));
        backend
            .compiled(key, &described, &derived.result, false, &front)
            .0
            .map_err(|e| format!("{} cannot compile it: {e}", backend.name()))
    }
}

/// The identity the "not split" notice of `site` is given once for.
pub fn notice_id(site: usize) -> usize {
    derived_id(site, usize::MAX, 0)
}

/// What a run of one of a split site's programs needs of the site's marshaled captures
/// (shared by the devices' threads; the captures themselves stay locked by the caller's
/// marshal meanwhile).
pub struct Base {
    words: Vec<u64>,
    buffers: std::collections::HashMap<usize, usize>,
    tensor_buffers: Vec<(usize, usize)>,
    bytes: usize,
}

/// A capture handed to each part as its range `lo..hi` only.
pub struct Sliced {
    /// Its first word among the captures' (its length; its columns follow, after its
    /// rows' length for rows).
    pub word: usize,
    /// Whether its elements are rows (of one length: a row of the range is that many
    /// elements of each column).
    pub rows: bool,
    /// Its columns' element sizes.
    pub sizes: Vec<usize>,
}

impl Base {
    pub fn of(m: &Marshal<'_>) -> Base {
        Base {
            words: m.words.clone(),
            buffers: m.buffers.clone(),
            tensor_buffers: m.tensor_buffers.clone(),
            bytes: m.bytes,
        }
    }

    /// The tensor buffers the captures view: host address and size.
    pub fn tensor_buffers(&self) -> &[(usize, usize)] {
        &self.tensor_buffers
    }

    /// A marshal of the site's captures with `extra` words after them.
    pub fn with(&self, extra: &[u64]) -> Marshal<'static> {
        self.marshal([&self.words[..], extra].concat())
    }

    /// A marshal of the captures for the part `lo..hi`: the `sliced` ones cut to it, then
    /// `lo` and `hi`.
    pub fn part(&self, lo: usize, hi: usize, sliced: &[Sliced]) -> Marshal<'static> {
        let mut words = self.words.clone();
        for s in sliced {
            words[s.word] = (hi - lo) as u64;
            let (first, per_row) = if s.rows {
                (s.word + 2, words[s.word + 1] as usize)
            } else {
                (s.word + 1, 1)
            };
            for (k, size) in s.sizes.iter().enumerate() {
                // Wrapping: a distributed sequence's address is shifted back by its part's
                // start (`abi::DistCapture`), and this adds it back.
                words[first + k] = words[first + k].wrapping_add((lo * per_row * size) as u64);
            }
        }
        words.extend_from_slice(&[lo as u64, hi as u64]);
        self.marshal(words)
    }

    fn marshal(&self, words: Vec<u64>) -> Marshal<'static> {
        Marshal::over(words, &self.buffers, &self.tensor_buffers, self.bytes)
    }
}
