//! Whole programs: a site's value (a sequence, a nested sequence, a reduction, a pair of
//! reductions, or tensors written by a `parallel_loop`), its inputs and helpers.

use super::types::{Props, Ty, Var, NUMBERS, S};
use super::{Gen, Program};
use crate::choices::Choices;

/// How deep expressions nest.
const DEPTH: u32 = 4;

/// Generates program `id` from `choices`.
pub fn generate(id: usize, choices: &mut Choices) -> Program {
    let mut g = Gen::new(choices, id);
    let (result, body, tail) = match g.c.below(8) {
        0 | 1 => {
            let elem = g.elem_type();
            let e = g.seq(&elem, &[], DEPTH);
            (Ty::seq(elem), g.owned(e).code, None)
        }
        2 => {
            let s = g.c.pick(&NUMBERS);
            let e = g.nested(s);
            (Ty::seq(Ty::seq(Ty::S(s))), e, None)
        }
        3 | 4 => {
            let ty = g.elem_type();
            let e = g.reduced(&ty, &[], DEPTH);
            (ty, e.code, None)
        }
        5 => {
            let (a, b) = (g.c.pick(&NUMBERS), g.c.pick(&NUMBERS));
            let x = g.reduced(&Ty::S(a), &[], DEPTH - 1);
            let y = g.reduced(&Ty::S(b), &[], DEPTH - 1);
            (Ty::Pair(a, b), format!("({}, {})", x.code, y.code), None)
        }
        6 => {
            let ty = g.elem_type();
            g.staged(&ty)
        }
        _ => {
            let (s, body, tail) = g.imperative();
            (Ty::seq(Ty::S(s)), body, Some(tail))
        }
    };
    let mut source = g.helpers.join("\n");
    source.push_str(&format!(
        "\nfn program_{id}() -> Result<{}, AccelError> {{\n",
        result.rust()
    ));
    for input in &g.inputs {
        source.push_str(&format!("    {input}\n"));
    }
    match tail {
        None => source.push_str(&format!("    try_accelerate!({body})\n}}\n")),
        Some((setup, tensor)) => source.push_str(&format!(
            "    {setup}\n    try_accelerate!({body})?;\n    Ok({tensor}.to_vec())\n}}\n"
        )),
    }
    Program {
        id,
        source,
        choices: g.c.values().to_vec(),
    }
}

impl Gen<'_> {
    /// A regular nested sequence: rows of a fixed length made per element, or rows mapped.
    fn nested(&mut self, s: S) -> String {
        let elem = Ty::S(s);
        if self.c.chance(50) {
            let t = self.c.pick(&NUMBERS);
            let rows = self.input_rows(t);
            let (row, y) = (self.name("row"), self.name("y"));
            let env = [
                Var::local(row.clone(), Ty::seq(Ty::S(t)), Props::EXACT),
                Var::local(y.clone(), Ty::S(t), Props::EXACT),
            ];
            let f = self.value(&elem, &env, DEPTH - 1);
            return format!("map(|{row}| map(|{y}| {}, &{row}), &{})", f.code, rows.name);
        }
        let from = self.elem_type();
        let src = self.seq(&from, &[], DEPTH - 1);
        let x = self.name("x");
        let j = self.name("j");
        let env = [
            Var::local(x.clone(), from, src.props),
            Var::local(j.clone(), Ty::S(S::Usize), Props::EXACT),
        ];
        let f = self.value(&elem, &env, DEPTH - 1);
        let k = self.c.pick(&[2, 0, 1, 3, 4, 7]);
        format!("map(|{x}| create({k}, |{j}| {}), {})", f.code, src.code)
    }

    /// A block binding intermediate results (a sequence and a reduction of it) that the
    /// value then uses: producers with more than one consumer, scalars from reductions.
    fn staged(&mut self, ty: &Ty) -> (Ty, String, Option<(String, String)>) {
        let from = self.elem_type();
        let v = self.name("v");
        let bound = self.seq(&from, &[], DEPTH - 1);
        let bound = self.owned(bound);
        let mut env = vec![Var::site(v.clone(), Ty::seq(from.clone()), bound.props)];
        let t = self.c.pick(&NUMBERS);
        let s = self.name("s");
        let total = self.reduced(&Ty::S(t), &env, DEPTH - 1);
        env.push(Var::site(s.clone(), Ty::S(t), total.props));
        let (result, value) = if self.c.chance(50) {
            let e = self.seq(ty, &env, DEPTH - 1);
            (Ty::seq(ty.clone()), self.owned(e).code)
        } else {
            let e = self.reduced(ty, &env, DEPTH - 1);
            (ty.clone(), e.code)
        };
        let body = format!(
            "{{\n        let {v} = {};\n        let {s} = {};\n        {value}\n    }}",
            bound.code, total.code
        );
        (result, body, None)
    }

    /// A `parallel_loop` writing every element of a new tensor once (1-d by index, or 2-d
    /// by rows), reading captured sequences and a captured tensor. Returns the element
    /// type, the site's expression, and the setup and tensor to read back.
    fn imperative(&mut self) -> (S, String, (String, String)) {
        let s = self.c.pick(&NUMBERS);
        let t = self.name("t");
        let rows = self.size().min(600);
        let cols = self.c.pick(&[1, 2, 3, 4, 8, 33]);
        // Sequences and a tensor the body may read (captured before the loop).
        let read_ty = Ty::S(self.c.pick(&NUMBERS));
        let reads = self.input_seq(&read_ty, true);
        let src = self.name("u");
        let src_len = self.size().max(1);
        let src_seed = self.seed();
        self.inputs.push(format!(
            "let {src} = Tensor::from_vec(support::seq::<{}>({src_seed}, {src_len}), &[{src_len}]);",
            s.name()
        ));
        self.no_functional = true;
        let i = self.name("i");
        let mut env = vec![
            Var::local(i.clone(), Ty::S(S::Usize), Props::EXACT),
            reads.clone(),
            Var::local(
                format!("{src}.get([({i} * 7 + 3) % {src_len}])"),
                Ty::S(s),
                Props::EXACT,
            ),
        ];
        let body = if self.c.chance(50) {
            let e = self.scalar(s, &env, DEPTH, false);
            let setup = format!("let {t} = Tensor::<{}>::zeros(&[{rows}]);", s.name());
            let write = if rows == 0 || self.c.chance(50) {
                format!("[{i}]")
            } else {
                format!("[{rows} - 1 - {i}]")
            };
            (
                format!("parallel_loop({rows}, |{i}| {t}.set({write}, {}))", e.code),
                setup,
            )
        } else {
            let c = self.name("col");
            env.push(Var::local(c.clone(), Ty::S(S::Usize), Props::EXACT));
            let e = self.scalar(s, &env, DEPTH, false);
            let setup = format!(
                "let {t} = Tensor::<{}>::zeros(&[{rows}, {cols}]);",
                s.name()
            );
            (
                format!("parallel_loop({rows}, |{i}| {{ for {c} in 0..{cols} {{ {t}.set([{i}, {c}], {}); }} }})", e.code),
                setup,
            )
        };
        self.no_functional = false;
        (s, body.0, (body.1, t))
    }
}
