//! What a distributed site is compiled into: the site split (each rank's part), or its
//! stages one after another (`accel_ir::passes::fission::stages`), each split where it
//! can be and whole on every rank where it cannot, and the site's value from them.

use super::super::derived::Deriving;
use super::super::fission::{self, Combined, FissionSite};
use super::super::staged;
use super::super::Device;
use crate::backend::layout;
use crate::backend::{Backend, CompiledSite, FrontEnd, FrontEndFn, SiteKey};
use accel_ir::passes::fission::stages::stage_name;
use accel_ir::{Expr, Type};
use std::sync::Arc;
use std::time::Instant;

/// The role of a program run whole on every rank, and of the site's value from its
/// stages (fission's roles are 1 to 8).
const WHOLE: usize = 9;
const LAST: usize = 10;

/// One program of a distributed site.
pub enum Program {
    /// Each rank runs its part; collectives combine them.
    Split(FissionSite),
    /// Every rank runs all of it on the gathered sequences.
    Whole(Arc<dyn CompiledSite>),
}

/// A stage of a distributed site.
pub struct Stage {
    pub program: Program,
    /// The sizes of its result's columns, where it is a sequence of flat elements (each
    /// rank then keeps its part of it for the later stages).
    pub sizes: Option<Vec<usize>>,
}

/// The site's value from its captures and its stages' results.
pub struct Last {
    pub code: Arc<dyn CompiledSite>,
    /// The first words of the captures (and stage results) it reads.
    pub reads: Vec<usize>,
}

/// A site over distributed sequences, compiled for one device per rank.
pub struct DistSite {
    /// Its stages, in order (one where the site ends in one operation).
    pub(super) stages: Vec<Stage>,
    /// The site's value from the stages' results (none: the last stage's result is).
    pub(super) last: Option<Last>,
    /// Why the site, or a stage of it, runs whole on every rank.
    pub(super) not_split: Option<String>,
    pub(super) device: Device,
    pub(super) compile_ms: f64,
}

impl DistSite {
    /// Why the site, or a stage of it, runs whole on every rank, if one does.
    pub fn not_split(&self) -> Option<&str> {
        self.not_split.as_deref()
    }
}

/// `d`'s program split for ranks, or why it runs whole.
fn split_program(
    d: &Deriving<'_>,
    device: Device,
    backend_of: &dyn Fn(Device) -> &'static dyn Backend,
) -> Result<FissionSite, String> {
    fission::compile(d, &[device], backend_of, true).and_then(|s| match s.combine {
        Combined::Nothing => {
            Err("a parallel_loop writes tensors, which are not distributed".into())
        }
        _ if s.rows => Err("its elements are rows".into()),
        _ => Ok(s),
    })
}

/// Compiles `site` for ranks that each run their part on `device`.
pub fn compile(
    site: SiteKey,
    front: FrontEndFn<'_>,
    device: Device,
    backend_of: &dyn Fn(Device) -> &'static dyn Backend,
) -> Result<DistSite, String> {
    let start = Instant::now();
    let fe = front()?;
    let d = Deriving {
        site,
        stage: 0,
        front: &fe,
    };
    let whole = |d: &Deriving<'_>, body: &Expr, ty: &Type| {
        device.enter(|| d.on(backend_of(device), WHOLE, body, &[], ty.clone()))
    };
    let (stages, last, not_split) = match split_program(&d, device, backend_of) {
        Ok(split) => {
            let stage = Stage {
                program: Program::Split(split),
                sizes: layout::flat_sequence_sizes(&fe.result),
            };
            (vec![stage], None, None)
        }
        Err(why) => match staged(site, &fe, device, backend_of)? {
            Some((stages, last, whole_stage)) => (stages, last, whole_stage),
            None => {
                let stage = Stage {
                    program: Program::Whole(whole(&d, &fe.fused, &fe.result)?),
                    sizes: None,
                };
                (
                    vec![stage],
                    None,
                    Some(format!("the site does not split ({why})")),
                )
            }
        },
    };
    Ok(DistSite {
        stages,
        last,
        not_split,
        device,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

/// The stages of a site of several operations, the program of its value, and why a stage
/// runs whole if one does; `None` where stages do not help (a lone operation that did not
/// split, or stages none of which splits).
#[allow(clippy::type_complexity)]
fn staged(
    site: SiteKey,
    fe: &FrontEnd,
    device: Device,
    backend_of: &dyn Fn(Device) -> &'static dyn Backend,
) -> Result<Option<(Vec<Stage>, Option<Last>, Option<String>)>, String> {
    let Some(staged) = staged::stages_of(fe) else {
        return Ok(None);
    };
    let mut captures = fe.captures.clone();
    let mut out = Vec::new();
    let mut whole_why = None;
    for (k, stage) in staged.stages.iter().enumerate() {
        let front = staged::stage_front(fe, &captures, k, stage);
        let d = Deriving {
            site,
            stage: k + 1,
            front: &front,
        };
        let program = match split_program(&d, device, backend_of) {
            Ok(split) => Program::Split(split),
            Err(why) => {
                whole_why.get_or_insert(format!("its stage {k} does not split ({why})"));
                let code = device.enter(|| {
                    d.on(
                        backend_of(device),
                        WHOLE,
                        &stage.body,
                        &[],
                        stage.ty.clone(),
                    )
                })?;
                Program::Whole(code)
            }
        };
        out.push(Stage {
            program,
            sizes: layout::flat_sequence_sizes(&stage.ty),
        });
        captures.push((stage_name(k), stage.ty.clone()));
    }
    if out.iter().all(|s| matches!(s.program, Program::Whole(_))) {
        return Ok(None);
    }
    let cpu = (LAST, backend_of(Device::Cpu));
    let last = match staged::value_program(site, fe, captures, &staged, cpu)? {
        None => None,
        Some((code, front)) => Some(Last {
            code,
            reads: words_read(&front.fused, &front.captures)?,
        }),
    };
    Ok(Some((out, last, whole_why)))
}

/// The first words of the `captures` that `body` names.
fn words_read(body: &Expr, captures: &[(String, Type)]) -> Result<Vec<usize>, String> {
    let mut named = Vec::new();
    body.walk(&mut |e| {
        if let Expr::Var(v) = e {
            named.push(v.clone());
        }
    });
    let words = layout::first_words(captures)?;
    Ok(captures
        .iter()
        .zip(words)
        .filter(|((name, _), _)| named.contains(name))
        .map(|(_, word)| word)
        .collect())
}
