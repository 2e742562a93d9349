//! The program generator: well-typed accel sites from a sequence of choices.
//!
//! A program is one site (`accelerate!` over nested parallel operations, or a
//! `parallel_loop` writing tensors) with its captured inputs and the `#[accel]` helpers it
//! calls, written as a Rust function `program_N() -> Result<T, AccelError>`. Integer
//! arithmetic wraps (`wrapping_*`), divisors are kept nonzero, indices are reduced modulo
//! the length of a non-empty sequence, and float values are tracked (`Props`) so that a
//! comparison, a cast to an integer or a reordered sum only ever sees values every backend
//! computes identically: what remains of float differences is rounding in transcendental
//! functions and in reordered sums of bounded values, which the comparison's tolerance
//! covers.

mod scalar;
mod seq;
mod site;
pub mod types;

use crate::choices::Choices;
use types::{Props, Ty, Var, E, S};

pub use site::generate;

/// Sequence lengths: mostly small and around lane (4), warp (32) and block (256) edges;
/// rarely large (around chunk edges).
const SIZES: &[usize] = &[
    0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256,
    257, 511, 512, 513, 1000, 1023, 1024, 1025,
];
/// How many of `SIZES` are small (up to 129).
const SMALL_SIZES: usize = 24;
const LARGE_SIZES: &[usize] = &[2047, 2048, 2049, 4095, 4096, 4097, 10_000, 65_537];

/// A generated program.
#[derive(Clone, Debug)]
pub struct Program {
    /// Its number: the function is `program_{id}`.
    pub id: usize,
    /// The `#[accel]` helpers and the program function.
    pub source: String,
    /// The choices it was generated from (replaying them gives the same program).
    pub choices: Vec<u32>,
}

/// The state of one program's generation.
pub struct Gen<'c> {
    c: &'c mut Choices,
    id: usize,
    /// `let` statements creating the captured inputs.
    inputs: Vec<String>,
    /// Inputs by name and type (sequences, nested sequences, scalars).
    captured: Vec<Var>,
    /// Captured sequences short enough to loop over once per element.
    small: Vec<String>,
    helpers: Vec<String>,
    fresh: usize,
    /// Inside a `parallel_loop` or a helper: no functional operations (a helper sees only
    /// its parameters, not the site's captured sequences).
    no_functional: bool,
}

impl<'c> Gen<'c> {
    fn new(c: &'c mut Choices, id: usize) -> Gen<'c> {
        Gen {
            c,
            id,
            inputs: Vec::new(),
            captured: Vec::new(),
            small: Vec::new(),
            helpers: Vec::new(),
            fresh: 0,
            no_functional: false,
        }
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn size(&mut self) -> usize {
        if self.c.chance(3) {
            self.c.pick(LARGE_SIZES)
        } else {
            self.c.pick(SIZES)
        }
    }

    /// A length for new captured sequence `name`: a small one (at most 129) for code that
    /// runs once per element, so that nested loops stay fast in debug mode and on the
    /// emulator; `name` is recorded as small when its length is.
    fn input_len(&mut self, name: &str, small: bool) -> usize {
        let len = if small {
            self.c.pick(&SIZES[..SMALL_SIZES])
        } else {
            self.size()
        };
        if len <= SIZES[SMALL_SIZES - 1] {
            self.small.push(name.to_string());
        }
        len
    }

    fn seed(&mut self) -> usize {
        self.c.below(1 << 30)
    }

    /// A captured sequence of `elem`: an existing one (often) or a new one, `small` for code
    /// that runs once per element (see `input_len`).
    fn input_seq(&mut self, elem: &Ty, small: bool) -> Var {
        let ty = Ty::seq(elem.clone());
        let small_ones = self.small.clone();
        if let Some(v) = self.reuse(|v| v.ty == ty && (!small || small_ones.contains(&v.name))) {
            return v;
        }
        let name = self.name("xs");
        let len = self.input_len(&name, small);
        let seed = self.seed();
        self.capture(name, ty, format!("support::seq({seed}, {len})"))
    }

    /// Often (when there is one) a captured input that `fits`: inputs are shared between
    /// operations as in real code.
    fn reuse(&mut self, fits: impl Fn(&Var) -> bool) -> Option<Var> {
        let existing: Vec<Var> = self.captured.iter().filter(|v| fits(v)).cloned().collect();
        (!existing.is_empty() && !self.c.chance(40)).then(|| self.c.pick(&existing))
    }

    /// A new captured input `name: ty`, initialised by `init`.
    fn capture(&mut self, name: String, ty: Ty, init: String) -> Var {
        self.inputs
            .push(format!("let {name}: {} = {init};", ty.rust()));
        let var = Var::site(name, ty, Props::EXACT);
        self.captured.push(var.clone());
        var
    }

    /// A captured regular nested sequence of scalars `elem`.
    fn input_rows(&mut self, elem: S) -> Var {
        let ty = Ty::seq(Ty::seq(Ty::S(elem)));
        if let Some(v) = self.reuse(|v| v.ty == ty) {
            return v;
        }
        let name = self.name("rows");
        let n = self.c.pick(&[3, 0, 1, 2, 4, 5, 8, 17, 33, 64, 100]);
        let k = self.c.pick(&[2, 0, 1, 3, 4, 5, 7, 8, 16, 33]);
        let seed = self.seed();
        let var = self.capture(name, ty, format!("support::rows({seed}, {n}, {k})"));
        self.small.push(var.name.clone());
        var
    }

    /// A captured sequence of distinct indices, some past `bound` (so skipped).
    fn input_indices(&mut self, bound: &str, small: bool) -> String {
        let name = self.name("is");
        let len = self.input_len(&name, small);
        let seed = self.seed();
        let extra = self.c.pick(&[0, 1, 3, 10, 100]);
        let init = format!("support::distinct({seed}, {len}, {bound}.len() + {extra})");
        self.capture(name, Ty::seq(Ty::S(S::Usize)), init).name
    }

    /// `e` as an owned sequence: a captured one (`&xs`) through an identity `map`.
    fn owned(&mut self, e: E) -> E {
        match e.code.strip_prefix('&') {
            Some(name) => {
                let x = self.name("x");
                E::new(format!("map(|{x}| {x}, &{name})"), e.props)
            }
            None => e,
        }
    }

    /// A captured scalar.
    fn input_scalar(&mut self, s: S) -> Var {
        let name = self.name("c");
        let seed = self.seed();
        self.capture(name, Ty::S(s), format!("support::one({seed})"))
    }

    /// Adds an `#[accel]` helper and returns its name.
    fn helper(&mut self, params: &[(String, Ty)], result: &Ty, body: &str) -> String {
        let name = format!("p{}_h{}", self.id, self.helpers.len());
        let params: Vec<String> = params
            .iter()
            .map(|(n, t)| format!("{n}: {}", t.rust()))
            .collect();
        self.helpers.push(format!(
            "#[accel]\nfn {name}({}) -> {} {{\n    {body}\n}}\n",
            params.join(", "),
            result.rust()
        ));
        name
    }
}
