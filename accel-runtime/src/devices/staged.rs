//! A site across devices, stage by stage: a site that ends in one parallel operation is
//! split as it is; a site of several (`accel_ir::passes::fission::stages`) runs its
//! stages one after another, each split across the devices where it can be and run on
//! the first device where it cannot, each stage's result handed to the later stages as a
//! capture, and the site's last expression computed on the CPU from them.

use super::derived::{Base, Deriving};
use super::fission;
use super::Device;
use crate::backend::abi::Marshal;
use crate::backend::{Backend, CompiledSite, FrontEnd, FrontEndFn, Run, SiteKey};
use accel_ir::passes::fission::stages::{stage_name, stages, Stage, Staged};
use accel_ir::{Expr, Records, Stmt, Type};
use std::sync::Arc;
use std::time::Instant;

/// A stage run whole on the first device, and the site's last expression (the split
/// programs' roles are 1 to 5: `fission`).
const WHOLE: usize = 6;
const LAST: usize = 7;

/// A site compiled for several devices.
pub struct StagedSite {
    /// Each stage's code, and whether it is split (else it runs on the first device).
    stages: Vec<(Arc<dyn CompiledSite>, bool)>,
    /// The site's value from the stages' (none: the last stage's result is the value).
    last: Option<Arc<dyn CompiledSite>>,
    first: Device,
    summary: String,
    compile_ms: f64,
}

/// The stages of a site of several operations (or of one with more after it), where
/// staging helps: a lone operation that did not split will not split as a stage.
pub(super) fn stages_of(fe: &FrontEnd) -> Option<Staged> {
    let mut records = Records::default();
    for (_, t) in &fe.captures {
        t.learn_records(&mut records);
    }
    fe.result.learn_records(&mut records);
    match stages(&fe.fused, &fe.captures, &records) {
        Ok(s) if s.stages.len() > 1 || s.last != Expr::Var(stage_name(0)) => Some(s),
        _ => None,
    }
}

/// The front end of stage `k` of the site `fe`, from its captures and the results of the
/// stages before it (`captures`).
pub(super) fn stage_front(
    fe: &FrontEnd,
    captures: &[(String, Type)],
    k: usize,
    stage: &Stage,
) -> FrontEnd {
    FrontEnd {
        fused: stage.body.clone(),
        captures: captures.to_vec(),
        result: stage.ty.clone(),
        program_hash: format!("{}/stage{k}", fe.program_hash),
    }
}

/// The front end of the site's value from its captures and every stage's result
/// (`captures`), or `None` where the value is the last stage's result: that result, after
/// nothing but `let`s of names and literals (which cannot fail).
fn value_front(fe: &FrontEnd, captures: Vec<(String, Type)>, staged: &Staged) -> Option<FrontEnd> {
    let value = Expr::Var(stage_name(staged.stages.len() - 1));
    let is_last_stage = match &staged.last {
        Expr::Block {
            stmts,
            result: Some(r),
        } => {
            **r == value
                && stmts.iter().all(|s| {
                    matches!(
                        s,
                        Stmt::Let {
                            init: Some(Expr::Var(_) | Expr::Lit(_)),
                            ..
                        }
                    )
                })
        }
        e => *e == value,
    };
    (!is_last_stage).then(|| FrontEnd {
        fused: staged.last.clone(),
        captures,
        result: fe.result.clone(),
        program_hash: format!("{}/last", fe.program_hash),
    })
}

/// A compiled value program and the front end it was compiled from.
pub(super) type ValueProgram = (Arc<dyn CompiledSite>, FrontEnd);

/// The program that computes the site's value from its stages' results (see
/// [`value_front`]), compiled by `backend` as program `role`, with the front end it was
/// compiled from; `None` where the last stage's result is the value.
pub(super) fn value_program(
    site: SiteKey,
    fe: &FrontEnd,
    captures: Vec<(String, Type)>,
    staged: &Staged,
    (role, backend): (usize, &'static dyn Backend),
) -> Result<Option<ValueProgram>, String> {
    let Some(front) = value_front(fe, captures, staged) else {
        return Ok(None);
    };
    let d = Deriving {
        site,
        stage: 0,
        front: &front,
    };
    let code = d.on(backend, role, &front.fused, &[], fe.result.clone())?;
    Ok(Some((code, front)))
}

/// Compiles `site` for `devices`, or says why it runs on one device.
pub fn compile(
    site: SiteKey,
    front: FrontEndFn<'_>,
    devices: &[Device],
    backend_of: &dyn Fn(Device) -> &'static dyn Backend,
) -> Result<StagedSite, String> {
    let start = Instant::now();
    let fe = front()?;
    let names: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let whole = Deriving {
        site,
        stage: 0,
        front: &fe,
    };
    // One operation at the end: split as it is.
    let why = match fission::compile(&whole, devices, backend_of, false) {
        Ok(split) => {
            return Ok(StagedSite {
                stages: vec![(Arc::new(split), true)],
                last: None,
                first: devices[0],
                summary: format!("split across {}", names.join(", ")),
                compile_ms: start.elapsed().as_secs_f64() * 1e3,
            })
        }
        Err(why) => why,
    };
    let Some(staged) = stages_of(&fe) else {
        return Err(why);
    };
    let mut captures = fe.captures.clone();
    let mut codes = Vec::new();
    for (k, stage) in staged.stages.iter().enumerate() {
        let front = stage_front(&fe, &captures, k, stage);
        let d = Deriving {
            site,
            stage: k + 1,
            front: &front,
        };
        let code = match fission::compile(&d, devices, backend_of, false) {
            Ok(split) => (Arc::new(split) as Arc<dyn CompiledSite>, true),
            Err(_) => {
                let first = devices[0];
                let body = &stage.body;
                let code =
                    first.enter(|| d.on(backend_of(first), WHOLE, body, &[], stage.ty.clone()))?;
                (code, false)
            }
        };
        codes.push(code);
        captures.push((stage_name(k), stage.ty.clone()));
    }
    let split = codes.iter().filter(|(_, s)| *s).count();
    if split == 0 {
        return Err(why);
    }
    let last = value_program(
        site,
        &fe,
        captures,
        &staged,
        (LAST, backend_of(Device::Cpu)),
    )?
    .map(|(code, _)| code);
    Ok(StagedSite {
        summary: format!(
            "{} stage{}, {split} split across {}",
            codes.len(),
            if codes.len() == 1 { "" } else { "s" },
            names.join(", ")
        ),
        stages: codes,
        last,
        first: devices[0],
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

impl CompiledSite for StagedSite {
    fn summary(&self) -> String {
        self.summary.clone()
    }

    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    fn run(&self, captures: &Marshal<'_>) -> Result<Run, String> {
        if let ([(code, _)], None) = (&self.stages[..], &self.last) {
            return code.run(captures);
        }
        let base = Base::of(captures);
        // The stages' results so far, after the captures.
        let mut words = Vec::new();
        let mut kept = Vec::new();
        let mut reports = Vec::new();
        for (k, (code, split)) in self.stages.iter().enumerate() {
            let m = base.with(&words);
            let run = if *split {
                code.run(&m)?
            } else {
                self.first.enter(|| code.run(&m))?
            };
            let on = if *split {
                String::new()
            } else {
                format!(" on {}", self.first)
            };
            reports.push(format!("stage {k}{on}: {}", run.report));
            words.extend_from_slice(&run.words);
            kept.push(run);
        }
        let mut result = match &self.last {
            Some(last) => last.run(&base.with(&words))?,
            None => kept
                .pop()
                .ok_or("a site split into stages has none (a bug in accel)")?,
        };
        // The stages' results the value points into live as long as it does.
        for run in kept {
            if result.words.iter().any(|&w| run.arena.owns(w as usize, 1)) {
                result.arena.absorb(run.arena);
            }
        }
        result.report = reports.join("; ");
        Ok(result)
    }
}
