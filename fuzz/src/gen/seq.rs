//! Sequence-valued operations (`map`, `map2`, `filter`, `scan`, `create`, `flatten`,
//! `scatter`, `reduce_by_index`, iterator chains, `let`-bound intermediates) and the
//! reductions that consume them.

use super::types::{in_element, Props, Rec, ScalarKind, Ty, Var, E, INTS, NUMBERS, S};
use super::Gen;

/// The start of an iterator chain and the closure parameter for what it yields.
struct Chain {
    head: String,
    ty: Ty,
    props: Props,
    x: String,
    inner: Vec<Var>,
}

/// An associative operator and its neutral element for some element type.
pub(super) struct Reduction {
    pub op: String,
    pub ne: String,
    /// What is known of the result.
    pub props: Props,
}

impl Gen<'_> {
    /// An element type for a sequence: mostly scalars, sometimes pairs and records.
    pub(super) fn elem_type(&mut self) -> Ty {
        match self.c.below(10) {
            0 => Ty::S(S::Bool),
            1..=6 => Ty::S(self.c.pick(&NUMBERS)),
            7 | 8 => Ty::Pair(self.c.pick(&NUMBERS), self.c.pick(&NUMBERS)),
            _ => Ty::Rec(self.c.pick(&[Rec::Pt, Rec::Px])),
        }
    }

    /// A sequence of `elem`, and what is known of its elements.
    pub(super) fn seq(&mut self, elem: &Ty, env: &[Var], depth: u32) -> E {
        if depth == 0 || self.no_functional {
            return self.named_seq(elem, env);
        }
        let d = depth - 1;
        match self.c.below(14) {
            0 | 1 => self.named_seq(elem, env),
            2 | 3 => {
                let from = self.elem_type();
                let src = self.seq(&from, env, d);
                let (x, inner) = self.bind("x", &from, src.props, env);
                let f = self.value(elem, &inner, d);
                E::new(format!("map(|{x}| {}, {})", f.code, src.code), f.props)
            }
            4 => {
                let (a, b) = (self.elem_type(), self.elem_type());
                let src = self.seq(&a, env, d);
                let (x, inner) = self.bind("x", &a, src.props, env);
                let g = self.value(&b, &inner, d);
                let (y, inner) = self.bind("x", &b, g.props, &inner);
                let f = self.value(elem, &inner, d);
                E::new(
                    format!(
                        "map2(|{x}, {y}| {}, {}, map(|{x}| {}, {}))",
                        f.code, src.code, g.code, src.code
                    ),
                    f.props,
                )
            }
            5 => {
                let src = self.seq(elem, env, d);
                let (x, inner) = self.bind("x", elem, src.props, env);
                let p = self.boolean(&inner, d);
                E::new(format!("filter(|{x}| {}, {})", p.code, src.code), src.props)
            }
            6 => {
                let src = self.seq(elem, env, d);
                let r = self.reduction(elem, src.props, false);
                E::new(format!("scan({}, {}, {})", r.op, r.ne, src.code), r.props)
            }
            7 => {
                let n = self.length(env);
                let (i, inner) = self.bind("i", &Ty::S(S::Usize), Props::EXACT, env);
                let f = self.value(elem, &inner, d);
                E::new(format!("create({n}, |{i}| {})", f.code), f.props)
            }
            8 => self.flattened(elem, env, d),
            9 => self.scattered(elem, env, d),
            10 => self.histogram(elem, env, d),
            11 => self.chain(elem, env, d),
            12 => {
                let from = self.elem_type();
                let bound = self.seq(&from, env, d);
                let bound = self.owned(bound);
                let v = self.name("v");
                let mut inner = env.to_vec();
                inner.push(Var {
                    local: in_element(env),
                    ..Var::local(v.clone(), Ty::seq(from), bound.props)
                });
                let body = self.seq(elem, &inner, d);
                let body = self.owned(body);
                E::new(
                    format!("{{ let {v} = {}; {} }}", bound.code, body.code),
                    body.props,
                )
            }
            _ => self.row_map(elem, env, d),
        }
    }

    /// A sequence of `elem` in scope or captured: `&name`.
    fn named_seq(&mut self, elem: &Ty, env: &[Var]) -> E {
        let ty = Ty::seq(elem.clone());
        let inner = in_element(env);
        let local: Vec<Var> = env
            .iter()
            .filter(|v| v.ty == ty && (!inner || v.local || self.small.contains(&v.name)))
            .cloned()
            .collect();
        if !local.is_empty() && self.c.chance(70) {
            let v = self.c.pick(&local);
            return E::new(format!("&{}", v.name), v.props);
        }
        if self.no_functional {
            // A helper cannot see the site's inputs: a small literal sequence instead.
            let e = self.value(elem, &[], 0);
            let n = self.c.below(4);
            return E::new(format!("vec![{}; {n}]", e.code), e.props);
        }
        let v = self.input_seq(elem, inner);
        E::new(format!("&{}", v.name), v.props)
    }

    /// A closure parameter (named from `prefix`) of type `ty`, and the environment with it.
    fn bind(&mut self, prefix: &str, ty: &Ty, props: Props, env: &[Var]) -> (String, Vec<Var>) {
        let x = self.name(prefix);
        let mut inner = env.to_vec();
        inner.push(Var::local(x.clone(), ty.clone(), props));
        (x, inner)
    }

    /// A length for `create`: a sequence's, a captured one or a literal.
    fn length(&mut self, env: &[Var]) -> String {
        let inner = in_element(env);
        let seqs: Vec<String> = env
            .iter()
            .chain(self.captured.iter())
            .filter(|v| {
                matches!(v.ty, Ty::Seq(_)) && (!inner || v.local || self.small.contains(&v.name))
            })
            .map(|v| v.name.clone())
            .collect();
        match self.c.below(3) {
            1 if !seqs.is_empty() => format!("{}.len()", self.c.pick(&seqs)),
            2 => {
                let n = self.input_scalar(S::Usize);
                format!("({} % {})", n.name, if inner { 17 } else { 300 })
            }
            _ if inner => format!("{}", self.c.below(9)),
            _ => format!("{}", self.size()),
        }
    }

    /// `flatten` of regular rows: a captured nested sequence, or rows of a fixed length made
    /// by `create` inside a `map`.
    fn flattened(&mut self, elem: &Ty, env: &[Var], d: u32) -> E {
        if let (Ty::S(s), true) = (elem, self.c.chance(30)) {
            let rows = self.input_rows(*s);
            return E::new(format!("flatten(&{})", rows.name), Props::EXACT);
        }
        let from = self.elem_type();
        let src = self.seq(&from, env, d);
        let (x, inner) = self.bind("x", &from, src.props, env);
        let (j, inner) = self.bind("j", &Ty::S(S::Usize), Props::EXACT, &inner);
        let f = self.value(elem, &inner, d);
        let k = self.c.pick(&[2, 0, 1, 3, 4, 5, 8]);
        E::new(
            format!(
                "flatten(map(|{x}| create({k}, |{j}| {}), {}))",
                f.code, src.code
            ),
            f.props,
        )
    }

    /// `scatter` into a captured sequence at distinct indices (some past its end).
    fn scattered(&mut self, elem: &Ty, env: &[Var], d: u32) -> E {
        let dest = self.input_seq(elem, in_element(env));
        let is = self.input_indices(&dest.name, in_element(env));
        let (i, inner) = self.bind("i", &Ty::S(S::Usize), Props::EXACT, env);
        let v = self.value(elem, &inner, d);
        E::new(
            format!(
                "scatter(&{}, &{is}, map(|{i}| {}, &{is}))",
                dest.name, v.code
            ),
            dest.props.join(v.props),
        )
    }

    /// `reduce_by_index` with a commutative operator, indices computed from the values.
    fn histogram(&mut self, elem: &Ty, env: &[Var], d: u32) -> E {
        let from = self.elem_type();
        let src = self.seq(&from, env, d);
        let (x, inner) = self.bind("x", &from, src.props, env);
        let v = self.value(elem, &inner, d);
        let r = self.reduction(elem, v.props, true);
        let t = self.c.pick(&INTS);
        let k = self.scalar(t, &inner, d, true);
        let bins = self.c.pick(&[3, 1, 0, 2, 7, 16, 100, 1000]);
        let (dest, props) = if self.c.chance(50) {
            (format!("vec![{}; {bins}]", r.ne), r.props)
        } else {
            let dest = self.input_seq(elem, in_element(env));
            (format!("&{}", dest.name), r.props.join(dest.props))
        };
        let extra = self.c.pick(&[0, 1, 5]);
        // Indices modulo at least 1 (past the bins when `extra` > 0, so skipped).
        let extra = if bins + extra == 0 { 1 } else { extra };
        E::new(
            format!(
                "reduce_by_index({dest}, {}, {}, map(|{x}| ({} as usize) % ({bins} + {extra}), {}), map(|{x}| {}, {}))",
                r.op, r.ne, k.code, src.code, v.code, src.code
            ),
            props,
        )
    }

    /// An iterator chain over a captured sequence, collected.
    fn chain(&mut self, elem: &Ty, env: &[Var], d: u32) -> E {
        let from = self.elem_type();
        let Chain {
            head,
            ty,
            props,
            x,
            inner,
        } = self.chain_over(&from, env);
        if &ty == elem && self.c.chance(40) {
            let p = self.boolean(&inner, d);
            return E::new(
                format!(
                    "{head}.filter(|{x}| {{ let {x} = *{x}; {} }}).collect::<Vec<{}>>()",
                    p.code,
                    elem.rust()
                ),
                props,
            );
        }
        let f = self.value(elem, &inner, d);
        E::new(
            format!(
                "{head}.map(|{x}| {}).collect::<Vec<{}>>()",
                f.code,
                elem.rust()
            ),
            f.props,
        )
    }

    /// The start of a chain over a captured sequence of `from` (new or existing), and a
    /// closure parameter for what it yields.
    fn chain_over(&mut self, from: &Ty, env: &[Var]) -> Chain {
        let xs = self.input_seq(from, in_element(env));
        let (head, ty, props) = self.chain_head(&xs, env);
        let (x, inner) = self.bind("x", &ty, props, env);
        Chain {
            head,
            ty,
            props,
            x,
            inner,
        }
    }

    /// The start of a chain over `xs`: its elements, enumerated, or zipped with another
    /// captured sequence; with the type and properties of what it yields.
    fn chain_head(&mut self, xs: &Var, env: &[Var]) -> (String, Ty, Props) {
        let Ty::Seq(elem) = &xs.ty else {
            unreachable!()
        };
        let elem = (**elem).clone();
        let base = format!("{}.iter().copied()", xs.name);
        match self.c.below(4) {
            1 if matches!(elem, Ty::S(_)) => {
                let Ty::S(s) = elem else { unreachable!() };
                (
                    format!("{base}.enumerate()"),
                    Ty::Pair(S::Usize, s),
                    xs.props,
                )
            }
            2 if matches!(elem, Ty::S(_)) => {
                let Ty::S(s) = elem else { unreachable!() };
                let t = self.c.pick(&NUMBERS);
                let ys = self.input_seq(&Ty::S(t), in_element(env));
                (
                    format!("{base}.zip({}.iter().copied())", ys.name),
                    Ty::Pair(s, t),
                    xs.props.join(ys.props),
                )
            }
            _ => (base, elem, xs.props),
        }
    }

    /// `map` over the rows of a captured nested sequence (each row a sequence in scope).
    fn row_map(&mut self, elem: &Ty, env: &[Var], d: u32) -> E {
        let s = self.c.pick(&NUMBERS);
        let rows = self.input_rows(s);
        let (row, inner) = self.bind("row", &Ty::seq(Ty::S(s)), Props::EXACT, env);
        let f = self.value(elem, &inner, d);
        E::new(format!("map(|{row}| {}, &{})", f.code, rows.name), f.props)
    }

    /// A reduction of a sequence of `ty` to one value (reduce, or a chain's terminal).
    pub(super) fn reduced(&mut self, ty: &Ty, env: &[Var], depth: u32) -> E {
        let d = depth.saturating_sub(1);
        match self.c.below(4) {
            1 if *ty == Ty::S(S::Usize) || *ty == Ty::S(S::Bool) => {
                let from = self.elem_type_cheap();
                let Chain { head, x, inner, .. } = self.chain_over(&from, env);
                let p = self.boolean(&inner, d);
                let code = if *ty == Ty::S(S::Usize) {
                    format!(
                        "{head}.filter(|{x}| {{ let {x} = *{x}; {} }}).count()",
                        p.code
                    )
                } else {
                    let all = self.c.pick(&["any", "all"]);
                    format!("{head}.{all}(|{x}| {})", p.code)
                };
                E::new(code, Props::EXACT)
            }
            2 => {
                let from = self.elem_type_cheap();
                let Chain { head, x, inner, .. } = self.chain_over(&from, env);
                let f = self.value(ty, &inner, d);
                let r = self.reduction(ty, f.props, false);
                E::new(
                    format!("{head}.map(|{x}| {}).fold({}, {})", f.code, r.ne, r.op),
                    r.props,
                )
            }
            _ => {
                let src = self.seq(ty, env, d);
                let r = self.reduction(ty, src.props, false);
                E::new(format!("reduce({}, {}, {})", r.op, r.ne, src.code), r.props)
            }
        }
    }

    fn elem_type_cheap(&mut self) -> Ty {
        Ty::S(self.c.pick(&NUMBERS))
    }

    /// An associative operator for `ty` whose parallel result every backend computes
    /// within the tolerance, for elements with `props`; commutative when asked (or by
    /// chance), else sometimes not (composition of affine maps).
    pub(super) fn reduction(&mut self, ty: &Ty, props: Props, commutative: bool) -> Reduction {
        if let (Ty::Pair(a, b), false, true) = (ty, commutative, self.c.chance(15)) {
            if a == b && a.is_int() {
                let t = a.name();
                return Reduction {
                    op: "|p, q| (p.0.wrapping_mul(q.0), p.1.wrapping_mul(q.0).wrapping_add(q.1))"
                        .into(),
                    ne: format!("(1{t}, 0{t})"),
                    props: Props::EXACT,
                };
            }
        }
        let fields = ty.fields();
        let mut ops = Vec::new();
        let mut nes = Vec::new();
        let mut result = Props::EXACT;
        for (field, s) in &fields {
            let (op, ne, p) =
                self.field_monoid(*s, props, &format!("p{field}"), &format!("q{field}"));
            ops.push(op);
            nes.push(ne);
            result = result.join(p);
        }
        let (op, ne) = match ty {
            Ty::S(_) => (ops[0].clone(), nes[0].clone()),
            Ty::Pair(..) => (
                format!("({}, {})", ops[0], ops[1]),
                format!("({}, {})", nes[0], nes[1]),
            ),
            Ty::Rec(r) => {
                let names: Vec<&str> = r.fields().iter().map(|(n, _)| *n).collect();
                let with = |vals: &[String]| {
                    let fs: Vec<String> = names
                        .iter()
                        .zip(vals)
                        .map(|(n, v)| format!("{n}: {v}"))
                        .collect();
                    format!("{} {{ {} }}", r.name(), fs.join(", "))
                };
                (with(&ops), with(&nes))
            }
            Ty::Seq(_) => unreachable!("sequences are not reduced by a generated operator"),
        };
        Reduction {
            op: format!("|p, q| {op}"),
            ne,
            props: result,
        }
    }

    /// A commutative monoid on one scalar field: its combination of `a` and `b`, neutral
    /// element and result properties (a float sum only where it is safe, else min or max).
    fn field_monoid(&mut self, s: S, props: Props, a: &str, b: &str) -> (String, String, Props) {
        let t = s.name();
        if s == S::Bool {
            return if self.c.chance(50) {
                (format!("({a} && {b})"), "true".into(), Props::EXACT)
            } else {
                (format!("({a} || {b})"), "false".into(), Props::EXACT)
            };
        }
        if s.is_float() {
            let sum_ok = props.exact || (s == S::F64 && props.mag <= 1e4);
            return match self.c.below(3) {
                0 if sum_ok => {
                    let sum = Props {
                        det: props.exact,
                        exact: false,
                        mag: props.mag * 7e4,
                    };
                    (format!("{a} + {b}"), format!("0.0{t}"), sum)
                }
                1 => (format!("{a}.max({b})"), format!("{t}::NEG_INFINITY"), props),
                _ => (format!("{a}.min({b})"), format!("{t}::INFINITY"), props),
            };
        }
        let minus_one = if s.signed() {
            format!("(-1{t})")
        } else {
            format!("{t}::MAX")
        };
        match self.c.below(7) {
            0 => (
                format!("{a}.wrapping_add({b})"),
                format!("0{t}"),
                Props::EXACT,
            ),
            1 => (
                format!("{a}.wrapping_mul({b})"),
                format!("1{t}"),
                Props::EXACT,
            ),
            2 => (format!("{a}.min({b})"), format!("{t}::MAX"), Props::EXACT),
            3 => (format!("{a}.max({b})"), format!("{t}::MIN"), Props::EXACT),
            4 => (format!("({a} & {b})"), minus_one, Props::EXACT),
            5 => (format!("({a} | {b})"), format!("0{t}"), Props::EXACT),
            _ => (format!("({a} ^ {b})"), format!("0{t}"), Props::EXACT),
        }
    }
}
