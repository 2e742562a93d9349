//! Functions compiled while the next ones are generated: a site's first call waits for
//! generation and compilation of all its functions, and on two cores generating kernel 2
//! while Cranelift compiles kernel 1 hides most of one behind the other (Canny's site:
//! generation about half of the time, one large kernel most of the compilation).
//!
//! Each function is a job that the pool's threads start as soon as it is generated
//! (`parallel`), or that waits for [`Pipeline::finish`]. `finish` runs every job no thread
//! has started on the calling thread, then waits only for jobs that are running: it never
//! waits for a job that needs a free pool thread, so a site compiled from inside a rayon
//! task (every pool thread busy with the caller's own work) cannot deadlock.

use super::trivial_params::remove_trivial_block_params;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_module::{FuncId, ModuleReloc};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// A result, or why Cranelift could not compile a function.
type R<T> = Result<T, String>;

/// A function's machine code, ready for the module: its alignment, bytes and relocations.
pub(super) struct MachineCode {
    pub(super) id: FuncId,
    pub(super) alignment: u64,
    pub(super) bytes: Vec<u8>,
    pub(super) relocs: Vec<ModuleReloc>,
    pub(super) what: String,
}

/// One function's compilation: its input until a thread takes it, then its result.
struct Job {
    input: Mutex<Option<(FuncId, Function, String)>>,
    output: Mutex<Option<R<MachineCode>>>,
    done: Condvar,
}

/// The functions of one compile, in the order they were defined.
pub(super) struct Pipeline {
    isa: OwnedTargetIsa,
    parallel: bool,
    jobs: Vec<Arc<Job>>,
}

impl Pipeline {
    /// A pipeline compiling for `isa`; with `parallel`, each function starts compiling on
    /// the pool as soon as it is added.
    pub(super) fn new(isa: OwnedTargetIsa, parallel: bool) -> Pipeline {
        Pipeline {
            isa,
            parallel,
            jobs: Vec::new(),
        }
    }

    /// Adds the generated function `func` (named `what` in errors) under `id`.
    pub(super) fn add(&mut self, id: FuncId, func: Function, what: String) {
        let job = Arc::new(Job {
            input: Mutex::new(Some((id, func, what))),
            output: Mutex::new(None),
            done: Condvar::new(),
        });
        if self.parallel {
            let (job, isa) = (Arc::clone(&job), self.isa.clone());
            rayon::spawn(move || run(&job, &isa));
        }
        self.jobs.push(job);
    }

    /// Every function's machine code, in the order they were added: the jobs no thread
    /// started run here, then those running elsewhere are waited for.
    pub(super) fn finish(self) -> R<Vec<MachineCode>> {
        for job in &self.jobs {
            run(job, &self.isa);
        }
        self.jobs
            .iter()
            .map(|job| {
                let mut output = job.output.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(code) = output.take() {
                        return code;
                    }
                    output = job
                        .done
                        .wait(output)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            })
            .collect()
    }
}

/// Compiles `job` unless another thread has taken it.
fn run(job: &Job, isa: &OwnedTargetIsa) {
    let input = job
        .input
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some((id, func, what)) = input else {
        return;
    };
    // A panic inside Cranelift must not leave `finish` waiting for ever.
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        compile(id, func, &what, isa)
    }))
    .unwrap_or_else(|_| Err(format!("Cranelift panicked compiling {what}")));
    *job.output.lock().unwrap_or_else(PoisonError::into_inner) = Some(code);
    job.done.notify_all();
}

/// Cranelift's machine code for `func`, after the trivial block parameters are removed.
fn compile(id: FuncId, mut func: Function, what: &str, isa: &OwnedTargetIsa) -> R<MachineCode> {
    remove_trivial_block_params(&mut func);
    let mut ctx = cranelift_codegen::Context::for_function(func);
    let mut plane = cranelift_codegen::control::ControlPlane::default();
    ctx.compile(&**isa, &mut plane)
        .map_err(|e| format!("Cranelift rejected {what}: {:?}", e.inner))?;
    let code = ctx
        .compiled_code()
        .ok_or_else(|| format!("Cranelift compiled {what} without code"))?;
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    Ok(MachineCode {
        id,
        alignment: u64::from(code.buffer.alignment),
        bytes: code.code_buffer().to_vec(),
        relocs,
        what: what.to_string(),
    })
}
