//! The corpus: ordinary programs, each written three ways (sequential Rust, idiomatic rayon
//! as a rayon user writes it, and the `accelerate!` form a user would naturally write),
//! so that accel is judged on programs it was not tuned on.
//!
//! Every program is a [`Program`]: its inputs (random, from fixed seeds) built at a
//! [`Scale`], its three forms, and a check of a result against the sequential one. The
//! `corpus` binary times the three forms side by side, interleaved, and prints one table;
//! `tests/differential.rs` runs every program at [`Scale::Test`] in every mode.
//!
//! ```
//! use accel_corpus::{programs, Form, Scale};
//! let smvm = programs().into_iter().find(|p| p.name == "smvm").unwrap();
//! let case = (smvm.make)(Scale::Test);
//! let want = case.run(Form::Sequential);
//! assert!(case.check(&*case.run(Form::Rayon), &*want).is_ok());
//! ```

pub mod basics;
pub mod check;
pub mod paper;
pub mod polybench;

use std::any::Any;

pub use accel_examples::random;

/// How big the inputs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Small and odd sizes, for the differential tests (every mode, the emulator too).
    Test,
    /// The benchmark's sizes (PolyBench's LARGE where it fits 2 cores' time).
    Bench,
}

impl Scale {
    /// `test` at [`Scale::Test`], `bench` at [`Scale::Bench`].
    pub fn pick<T>(self, test: T, bench: T) -> T {
        match self {
            Scale::Test => test,
            Scale::Bench => bench,
        }
    }
}

/// One of a program's forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Plain sequential Rust.
    Sequential,
    /// Idiomatic rayon.
    Rayon,
    /// `accelerate!`, in the caller's mode.
    Accel,
    /// A library that does the whole task, where one exists (GEMM: `matrixmultiply`).
    Library,
}

/// A program of the corpus: inputs at one scale and its forms.
pub trait Program: 'static {
    /// What every form computes.
    type Output: 'static;
    /// The size of the inputs, in words (`"1000x1200"`).
    fn size(&self) -> String;
    /// The sequential form (the reference).
    fn sequential(&self) -> Self::Output;
    /// The rayon form.
    fn rayon(&self) -> Self::Output;
    /// The accel form.
    fn accel(&self) -> Self::Output;
    /// The library that does the task, when one does (the corpus reports it beside).
    const LIBRARY: Option<&'static str> = None;
    /// The library's form (`None` when [`Program::LIBRARY`] is).
    fn library(&self) -> Option<Self::Output> {
        None
    }
    /// Whether `got` is an acceptable result when the sequential form gave `want`.
    fn check(&self, got: &Self::Output, want: &Self::Output) -> Result<(), String>;
}

/// A program with its output type erased, so the corpus can hold every program in one list.
pub trait Case {
    /// [`Program::size`].
    fn size(&self) -> String;
    /// Runs one form. [`Form::Library`] is `None` where no library does the task.
    fn try_run(&self, form: Form) -> Option<Box<dyn Any>>;
    /// Runs one form that the program has.
    fn run(&self, form: Form) -> Box<dyn Any> {
        self.try_run(form)
            .unwrap_or_else(|| panic!("the program has no {form:?} form"))
    }
    /// The library's name, if one does the task.
    fn library_name(&self) -> Option<&'static str>;
    /// [`Program::check`] on erased results.
    fn check(&self, got: &dyn Any, want: &dyn Any) -> Result<(), String>;
}

impl<P: Program> Case for P {
    fn size(&self) -> String {
        Program::size(self)
    }

    fn try_run(&self, form: Form) -> Option<Box<dyn Any>> {
        let out: Box<dyn Any> = match form {
            Form::Sequential => Box::new(self.sequential()),
            Form::Rayon => Box::new(self.rayon()),
            Form::Accel => Box::new(self.accel()),
            Form::Library => Box::new(self.library()?),
        };
        Some(out)
    }

    fn library_name(&self) -> Option<&'static str> {
        P::LIBRARY
    }

    fn check(&self, got: &dyn Any, want: &dyn Any) -> Result<(), String> {
        let got = got.downcast_ref::<P::Output>().ok_or("wrong result type")?;
        let want = want
            .downcast_ref::<P::Output>()
            .ok_or("wrong result type")?;
        Program::check(self, got, want)
    }
}

/// Where a program comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The Accelerate paper's benchmark table.
    Paper,
    /// Image and text basics.
    Basics,
    /// PolyBench/C 4.2.
    PolyBench,
}

impl Group {
    /// The group's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Group::Paper => "paper",
            Group::Basics => "basics",
            Group::PolyBench => "polybench",
        }
    }
}

/// An entry of the corpus.
pub struct Entry {
    /// The program's short name (`gemm`).
    pub name: &'static str,
    /// Where it comes from.
    pub group: Group,
    /// Builds its inputs at a scale.
    pub make: fn(Scale) -> Box<dyn Case>,
}

/// Boxes a program built at a scale (for [`Entry::make`]).
pub fn boxed<P: Program>(p: P) -> Box<dyn Case> {
    Box::new(p)
}

/// Every program of the corpus, in table order.
pub fn programs() -> Vec<Entry> {
    let mut all = Vec::new();
    all.extend(paper::programs());
    all.extend(basics::programs());
    all.extend(polybench::programs());
    all
}
