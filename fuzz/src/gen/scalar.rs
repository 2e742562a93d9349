//! Element-level expressions: scalars, pairs and records, computed sequentially inside a
//! parallel operation's function (or a `parallel_loop`'s body).

use super::types::{Props, ScalarKind, Ty, Var, E, INTS, NUMBERS, S};
use super::Gen;

/// Float functions whose results backends round differently (within the tolerance).
const TRANSCENDENTAL: &[&str] = &["sin", "cos", "tanh", "atan"];

impl Gen<'_> {
    /// A value of `ty` (a scalar, pair or record).
    pub(super) fn value(&mut self, ty: &Ty, env: &[Var], depth: u32) -> E {
        match ty {
            Ty::S(s) => self.scalar(*s, env, depth, false),
            Ty::Pair(a, b) => {
                let (a, b) = (
                    self.scalar(*a, env, depth, false),
                    self.scalar(*b, env, depth, false),
                );
                E::new(format!("({}, {})", a.code, b.code), a.props.join(b.props))
            }
            Ty::Rec(r) => {
                let mut props = Props::EXACT;
                let fields: Vec<String> = r
                    .fields()
                    .iter()
                    .map(|(name, s)| {
                        let e = self.scalar(*s, env, depth, false);
                        props = props.join(e.props);
                        format!("{name}: {}", e.code)
                    })
                    .collect();
                E::new(format!("{} {{ {} }}", r.name(), fields.join(", ")), props)
            }
            Ty::Seq(_) => unreachable!("sequences are built by Gen::seq"),
        }
    }

    /// A scalar of type `s`; `det` asks for one every backend computes bit for bit.
    pub(super) fn scalar(&mut self, s: S, env: &[Var], depth: u32, det: bool) -> E {
        if depth == 0 {
            return self.leaf(s, env, det);
        }
        let d = depth - 1;
        match self.c.below(16) {
            0..=3 => self.leaf(s, env, det),
            4 | 5 => self.arithmetic(s, env, d, det),
            6 => self.cast(s, env, d, det),
            7 => {
                let c = self.boolean(env, d);
                let (a, b) = (self.scalar(s, env, d, det), self.scalar(s, env, d, det));
                E::new(
                    format!("if {} {{ {} }} else {{ {} }}", c.code, a.code, b.code),
                    a.props.join(b.props),
                )
            }
            8 => self.matching(s, env, d, det),
            9 => self.element_of(s, env, d, det),
            10 => self.sequential_loop(s, env, d, det),
            11 => self.call_helper(s, env, d, det),
            12 if !self.no_functional && !det => self.inner_reduction(s, env, d),
            13 => {
                let name = self.name("v");
                let t = self.c.pick(&NUMBERS);
                let bound = self.scalar(t, env, d, false);
                let mut inner = env.to_vec();
                inner.push(Var::local(name.clone(), Ty::S(t), bound.props));
                let body = self.scalar(s, &inner, d, det);
                E::new(
                    format!("{{ let {name} = {}; {} }}", bound.code, body.code),
                    body.props,
                )
            }
            _ => self.arithmetic(s, env, d, det),
        }
    }

    /// A variable (or a field of one) of type `s`, else a literal.
    fn leaf(&mut self, s: S, env: &[Var], det: bool) -> E {
        let mut found = Vec::new();
        for v in env {
            if matches!(v.ty, Ty::Seq(_)) || (det && !v.props.det) {
                continue;
            }
            for (field, t) in v.ty.fields() {
                if t == s {
                    found.push(E::new(format!("{}{field}", v.name), v.props));
                }
            }
        }
        if !found.is_empty() && !self.c.chance(20) {
            return self.c.pick(&found);
        }
        // A variable of another numeric type, converted.
        let mut others = Vec::new();
        for v in env {
            for (field, t) in v.ty.fields() {
                let convertible =
                    t != S::Bool && s != S::Bool && t != s && (!t.is_float() || v.props.det);
                if convertible && !matches!(v.ty, Ty::Seq(_)) {
                    others.push((format!("{}{field}", v.name), t, v.props));
                }
            }
        }
        if !others.is_empty() && self.c.chance(70) {
            let (code, t, props) = self.c.pick(&others);
            return match (t.is_float(), s.is_float()) {
                (false, true) => small_int_as(&code, s),
                (true, true) => E::new(format!("({code} as {})", s.name()), props),
                _ => E::new(format!("({code} as {})", s.name()), Props::EXACT),
            };
        }
        self.literal(s)
    }

    pub(super) fn literal(&mut self, s: S) -> E {
        let code = match s {
            S::Bool => self.c.pick(&["false", "true"]).to_string(),
            S::F32 | S::F64 => {
                let k = self.c.below(129) as i64 - 64;
                format!("({:?}{})", k as f64 / 4.0, s.name())
            }
            _ => {
                let small = self.c.below(21) as i64 - if s.signed() { 10 } else { 0 };
                match self.c.below(10) {
                    9 => format!("{}::MAX", s.name()),
                    8 if s.signed() => format!("{}::MIN", s.name()),
                    _ => format!("({small}{})", s.name()),
                }
            }
        };
        E::new(
            code,
            Props {
                det: true,
                exact: true,
                mag: 16.0,
            },
        )
    }

    /// Arithmetic that stays defined: wrapping integer operations, divisors kept nonzero,
    /// float operations on bounded values.
    fn arithmetic(&mut self, s: S, env: &[Var], d: u32, det: bool) -> E {
        if s == S::Bool {
            return self.boolean(env, d);
        }
        let a = self.scalar(s, env, d, det);
        let b = self.scalar(s, env, d, det);
        let props = a.props.join(b.props);
        let (x, y) = (&a.code, &b.code);
        if s.is_int() {
            let code = match self.c.below(11) {
                0 => format!("{x}.wrapping_add({y})"),
                1 => format!("{x}.wrapping_sub({y})"),
                2 => format!("{x}.wrapping_mul({y})"),
                3 => format!("({x} & {y})"),
                4 => format!("({x} | {y})"),
                5 => format!("({x} ^ {y})"),
                6 => format!("({x} / (({y} & 7) + 1))"),
                7 => format!("({x} % (({y} & 7) + 1))"),
                8 => format!("({x} >> {})", 1 + self.c.below(5)),
                9 => format!("{x}.min({y})"),
                _ => format!("{x}.max({y})"),
            };
            return E::new(code, props);
        }
        let small = props.mag <= 1024.0;
        let (code, props) = match self.c.below(10) {
            op @ (0 | 1) => (
                format!("({x} {} {y})", if op == 0 { "+" } else { "-" }),
                Props {
                    exact: props.exact && small,
                    mag: a.props.mag + b.props.mag,
                    ..props
                },
            ),
            2 => {
                let k = self.c.pick(&[2.0, -1.0, 4.0, 0.5, 3.0]);
                let exact = props.exact && small && k != 0.5 && k != 3.0;
                (
                    format!("({x} * {k:?}{})", s.name()),
                    Props {
                        exact,
                        mag: a.props.mag * 4.0,
                        ..a.props
                    },
                )
            }
            3 if a.props.mag * b.props.mag <= 1e6 => (
                format!("({x} * {y})"),
                Props {
                    exact: false,
                    mag: a.props.mag * b.props.mag,
                    ..props
                },
            ),
            4 => (
                format!("({x} / ({y}.abs() + 1.0))"),
                Props {
                    exact: false,
                    mag: a.props.mag,
                    ..props
                },
            ),
            5 => (format!("{x}.min({y})"), props),
            6 => (format!("{x}.max({y})"), props),
            7 => (
                format!("{x}.abs().sqrt()"),
                Props {
                    exact: false,
                    mag: a.props.mag.sqrt() + 1.0,
                    ..a.props
                },
            ),
            8 => (format!("{x}.floor()"), a.props),
            _ if !det => {
                let f = self.c.pick(TRANSCENDENTAL);
                (
                    format!("{x}.{f}()"),
                    Props {
                        det: false,
                        exact: false,
                        mag: 2.0,
                    },
                )
            }
            _ => (format!("(-{x})"), a.props),
        };
        E::new(code, props)
    }

    /// A cast from another scalar type (floats only from values every backend agrees on).
    fn cast(&mut self, s: S, env: &[Var], d: u32, det: bool) -> E {
        if s == S::Bool {
            return self.boolean(env, d);
        }
        let from = self.c.pick(&NUMBERS);
        let x = self.scalar(from, env, d, det || !s.is_float() || from.is_int());
        if s.is_float() && from.is_int() {
            // Small integers convert exactly, so their sums do too.
            if self.c.chance(50) {
                return small_int_as(&x.code, s);
            }
            return E::new(
                format!("({} as {})", x.code, s.name()),
                Props {
                    det: true,
                    exact: false,
                    mag: 2e19,
                },
            );
        }
        if s.is_int() && from.is_float() && !x.props.det {
            return self.leaf(s, env, det);
        }
        let props = if s.is_float() {
            Props {
                exact: x.props.exact && s == from,
                ..x.props
            }
        } else {
            Props::EXACT
        };
        E::new(format!("({} as {})", x.code, s.name()), props)
    }

    /// A boolean from comparisons of values every backend computes alike.
    pub(super) fn boolean(&mut self, env: &[Var], depth: u32) -> E {
        let d = depth.saturating_sub(1);
        let code = match if depth == 0 { 0 } else { self.c.below(6) } {
            0 => return self.leaf(S::Bool, env, true),
            1 => format!("!{}", self.boolean(env, d).code),
            2 => format!(
                "({} && {})",
                self.boolean(env, d).code,
                self.boolean(env, d).code
            ),
            3 => format!(
                "({} || {})",
                self.boolean(env, d).code,
                self.boolean(env, d).code
            ),
            _ => {
                let t = self.c.pick(&NUMBERS);
                let (a, b) = (self.scalar(t, env, d, true), self.scalar(t, env, d, true));
                let op = self.c.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({} {op} {})", a.code, b.code)
            }
        };
        E::new(code, Props::EXACT)
    }

    /// `match` on an integer's remainder, with literal arms.
    fn matching(&mut self, s: S, env: &[Var], d: u32, det: bool) -> E {
        let t = self.c.pick(&INTS);
        let k = self.scalar(t, env, d, true);
        let arms = 2 + self.c.below(3);
        let mut props = Props::EXACT;
        let mut code = format!("match {} % {arms} {{ ", k.code);
        for arm in 0..arms {
            let e = self.scalar(s, env, d, det);
            props = props.join(e.props);
            let pattern = if arm + 1 == arms {
                "_".to_string()
            } else {
                format!("{arm}")
            };
            code.push_str(&format!("{pattern} => {}, ", e.code));
        }
        code.push('}');
        E::new(code, props)
    }

    /// An element of a sequence in scope, at an index reduced modulo its length.
    fn element_of(&mut self, s: S, env: &[Var], d: u32, det: bool) -> E {
        let mut candidates = Vec::new();
        for v in env.iter() {
            if let Ty::Seq(elem) = &v.ty {
                for (field, t) in elem.fields() {
                    if t == s && (!det || v.props.det) {
                        candidates.push((v.clone(), field));
                    }
                }
            }
        }
        if candidates.is_empty() {
            return self.scalar(s, env, d, det);
        }
        let (v, field) = self.c.pick(&candidates);
        let t = self.c.pick(&INTS);
        let k = self.scalar(t, env, d, true);
        let fallback = self.literal(s);
        E::new(
            format!(
                "if {0}.is_empty() {{ {1} }} else {{ {0}[({2} as usize) % {0}.len()]{field} }}",
                v.name, fallback.code, k.code
            ),
            v.props,
        )
    }

    /// A sequential `for` or `while` loop accumulating into a mutable local.
    fn sequential_loop(&mut self, s: S, env: &[Var], d: u32, det: bool) -> E {
        if s == S::Bool {
            return self.boolean(env, d);
        }
        let acc = self.name("acc");
        let j = self.name("j");
        let start = self.scalar(s, env, d, det);
        // Loop over a sequence only where it is short and not already inside a loop.
        let in_loop = env.iter().any(|v| v.name.starts_with("acc"));
        let seqs: Vec<Var> = env
            .iter()
            .filter(|v| {
                matches!(v.ty, Ty::Seq(_)) && !in_loop && (v.local || self.small.contains(&v.name))
            })
            .cloned()
            .collect();
        let bound = if !seqs.is_empty() && self.c.chance(50) {
            format!("{}.len()", self.c.pick(&seqs).name)
        } else {
            // Typed: a loop variable over `0..5` would be an ambiguous `{integer}`.
            format!("{}usize", self.c.below(6))
        };
        let mut inner = env.to_vec();
        inner.push(Var::local(j.clone(), Ty::S(S::Usize), Props::EXACT));
        inner.push(Var::local(acc.clone(), Ty::S(s), start.props));
        let step = self.scalar(s, &inner, d, det);
        let update = if s.is_float() {
            format!("{acc} + {}", step.code)
        } else {
            format!("{acc}.wrapping_add({})", step.code)
        };
        let props = Props {
            mag: f64::INFINITY,
            exact: false,
            ..start.props.join(step.props)
        };
        let code = if self.c.chance(50) {
            format!(
                "{{ let mut {acc} = {}; for {j} in 0..{bound} {{ {acc} = {update}; }} {acc} }}",
                start.code
            )
        } else {
            format!(
                "{{ let mut {acc} = {}; let mut {j} = 0usize; while {j} < {bound} {{ {acc} = {update}; {j} += 1; }} {acc} }}",
                start.code
            )
        };
        E::new(code, props)
    }

    /// A call of a new `#[accel]` helper taking some of the values in scope.
    fn call_helper(&mut self, s: S, env: &[Var], d: u32, det: bool) -> E {
        let scalars: Vec<Var> = env
            .iter()
            .filter(|v| !matches!(v.ty, Ty::Seq(_)))
            .cloned()
            .collect();
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut inner = Vec::new();
        for k in 0..self.c.below(3) + 1 {
            let name = format!("a{k}");
            let (ty, arg, props) = if !scalars.is_empty() && self.c.chance(70) {
                let v = self.c.pick(&scalars);
                (v.ty.clone(), v.name.clone(), v.props)
            } else {
                let t = self.c.pick(&NUMBERS);
                let e = self.scalar(t, env, d, false);
                (Ty::S(t), e.code, e.props)
            };
            inner.push(Var::local(name.clone(), ty.clone(), props));
            params.push((name, ty));
            args.push(arg);
        }
        let was = std::mem::replace(&mut self.no_functional, true);
        let body = self.scalar(s, &inner, d, det);
        self.no_functional = was;
        let name = self.helper(&params, &Ty::S(s), &body.code);
        E::new(format!("{name}({})", args.join(", ")), body.props)
    }

    /// A reduction nested inside an element (sequential there), over a sequence in scope
    /// or a small `create`.
    fn inner_reduction(&mut self, s: S, env: &[Var], d: u32) -> E {
        let elem = Ty::S(s);
        let source = self.seq(&elem, env, d);
        let r = self.reduction(&elem, source.props, false);
        E::new(
            format!("reduce({}, {}, {})", r.op, r.ne, source.code),
            r.props,
        )
    }
}

/// An integer's remainder modulo 64 as a float of type `s`: small, so converted exactly and
/// summed exactly in any order.
fn small_int_as(code: &str, s: S) -> E {
    E::new(
        format!("(({code} % 64) as {})", s.name()),
        Props {
            det: true,
            exact: true,
            mag: 64.0,
        },
    )
}
