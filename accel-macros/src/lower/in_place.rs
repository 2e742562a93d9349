//! rayon's in-place forms: `xs.par_iter_mut().for_each(|x| *x = f(*x))`, with `.zip(ys)`
//! and `.enumerate()`, and `xs.par_chunks_mut(k).for_each(|row| ..)` (`chunks_exact_mut`
//! too; std's `iter_mut`/`chunks_mut` alike). Each is a `parallel_loop` over the captured
//! sequence lent as a tensor over its own memory (`MutSeq` in the runtime): an element's
//! reads and writes become `xs.get([i])` and `xs.set([i], v)`, a row is the view
//! `xs.sub(i * k, len)`, whose indices are checked against the row. Debug mode runs the
//! form as the Rust it is (`expand::rust_form`).

use super::chains::{chunk_count, let_in, within_lets};
use super::*;
use accel_ir::{Pat, Stmt};

/// What one iteration sees, in the shape of the closure's parameter.
enum Item {
    /// Element `i` of the sequence written in place.
    Place,
    /// Row `i` of `chunks_mut(k)`, a view of the sequence.
    Row,
    /// A value: an index of `enumerate`, an element of a zipped sequence.
    Value(Expr),
    /// A pair of items (`enumerate`, `zip`).
    Pair(Box<Item>, Box<Item>),
}

/// An in-place form's source: the captured sequence, its chunking, the iteration's item
/// and how many iterations run, with the `let`s they need.
struct Source {
    target: String,
    /// `chunks_mut(k)`: the chunk length (a variable) and whether chunks are exact.
    chunks: Option<(Expr, bool)>,
    item: Item,
    count: Expr,
    lets: Vec<(String, Expr)>,
}

impl Lowerer {
    /// `source.for_each(f)`, when `source` is an in-place form (else `None`).
    pub(super) fn in_place(&mut self, m: &syn::ExprMethodCall) -> Option<Expr> {
        if m.method != "for_each" || m.args.len() != 1 || !is_in_place(&m.receiver) {
            return None;
        }
        let i = self.fresh_name("i");
        let Some(source) = self.in_place_source(&m.receiver, &i) else {
            return Some(Expr::Tuple(vec![]));
        };
        let syn::Expr::Closure(c) = &m.args[0] else {
            return Some(self.error(
                &m.args[0],
                "the argument of an in-place `.for_each` must be a closure: `.for_each(|x| *x = 2.0 * *x)`",
            ));
        };
        if c.inputs.len() != 1 {
            return Some(self.error(c, "an in-place `.for_each` closure takes one parameter"));
        }
        let Expr::Lambda { params, body } = self.closure(c) else {
            return Some(Expr::Tuple(vec![]));
        };
        let mut bound = Bound::default();
        if let Err(message) = self.bind_item(&params[0].0, &source, &var(&i), &mut bound) {
            return Some(self.error(&c.inputs[0], message));
        }
        let aliases = bound.places.iter().chain(&bound.rows);
        if let Some(name) = aliases.clone().find(|n| body.binds(n)) {
            return Some(self.error(
                &c.body,
                format!("`{name}` is bound again inside the closure: give the inner binding another name"),
            ));
        }
        let mut body = *body;
        rewrite(&mut body, &bound, &source.target, &i);
        let body = Expr::Block {
            stmts: bound.lets,
            result: Some(Box::new(body)),
        };
        let lambda = Expr::Lambda {
            params: vec![(Pat::bind(&i), Type::Infer)],
            body: Box::new(body),
        };
        let here = loc(m.method.span());
        let looped = self.par_at(ParOp::ParallelLoop, vec![source.count, lambda], here);
        if !self.in_place_targets.contains(&source.target) {
            self.in_place_targets.push(source.target.clone());
        }
        Some(within_lets(source.lets, looped))
    }

    /// The source of an in-place form (`xs.par_iter_mut()`, `xs.par_chunks_mut(k)`, then
    /// `.enumerate()` and `.zip(ys)`); `i` names the iteration's index.
    fn in_place_source(&mut self, e: &syn::Expr, i: &str) -> Option<Source> {
        let syn::Expr::MethodCall(m) = e else {
            self.error(
                e,
                "an in-place form starts from a captured sequence: `xs.par_iter_mut()`",
            );
            return None;
        };
        let name = m.method.to_string();
        match (name.as_str(), m.args.len()) {
            ("par_iter_mut" | "iter_mut", 0) => {
                let target = self.in_place_target(&m.receiver)?;
                Some(Source {
                    count: len_of(&target),
                    target,
                    chunks: None,
                    item: Item::Place,
                    lets: Vec::new(),
                })
            }
            ("par_chunks_mut" | "chunks_mut" | "par_chunks_exact_mut" | "chunks_exact_mut", 1) => {
                let target = self.in_place_target(&m.receiver)?;
                let exact = name.contains("exact");
                let k = self.fresh_name("k");
                let lets = vec![(k.clone(), self.expr(&m.args[0]))];
                let count = chunk_count(len_of(&target), var(&k), exact);
                Some(Source {
                    target,
                    chunks: Some((var(&k), exact)),
                    item: Item::Row,
                    count,
                    lets,
                })
            }
            ("enumerate", 0) => {
                let mut s = self.in_place_source(&m.receiver, i)?;
                let inner = std::mem::replace(&mut s.item, Item::Place);
                s.item = Item::Pair(Box::new(Item::Value(var(i))), Box::new(inner));
                Some(s)
            }
            ("zip", 1) => {
                let mut s = self.in_place_source(&m.receiver, i)?;
                let ys = self.chain_source(&m.args[0]);
                let name = self.fresh_name("ys");
                s.lets.push((name.clone(), ys));
                s.count = method(s.count, "min", vec![len_of(&name)]);
                let y = Expr::Index(Box::new(var(&name)), Box::new(var(i)));
                let inner = std::mem::replace(&mut s.item, Item::Place);
                s.item = Item::Pair(Box::new(inner), Box::new(Item::Value(y)));
                Some(s)
            }
            _ => {
                self.error(
                    &m.method,
                    format!("`.{name}` is not one of the in-place forms accelerated code has: `par_iter_mut()`, `par_chunks_mut(k)` (`iter_mut`, `chunks_mut`, `chunks_exact_mut`), then `.enumerate()` or `.zip(ys)`, then `.for_each(..)`"),
                );
                None
            }
        }
    }

    /// The captured sequence an in-place form writes: a name the site does not bind.
    fn in_place_target(&mut self, e: &syn::Expr) -> Option<String> {
        let e = match e {
            syn::Expr::Paren(p) => &*p.expr,
            e => e,
        };
        let name = match e {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        if !self.captures_allowed {
            self.error(e, "an #[accel] function cannot write a sequence in place: write it at the accelerate! site, over a sequence the site captures");
            return None;
        }
        match name {
            Some(n) if !self.is_local(&n) => Some(n),
            Some(n) => {
                self.error(e, format!("`{n}` is made inside the site: in-place forms write a captured sequence (a `Vec` or `&mut [T]` of the caller)"));
                None
            }
            None => {
                self.error(e, "in-place forms write a captured sequence named by a local: bind it first (`let xs = &mut v.data;`)");
                None
            }
        }
    }

    /// Binds the closure's parameter pattern `p` to the item: places and rows by name,
    /// values by `let`.
    fn bind_item(&mut self, p: &Pat, s: &Source, i: &Expr, out: &mut Bound) -> Result<(), String> {
        self.bind_part(p, &s.item, s, i, out)
    }

    fn bind_part(
        &mut self,
        p: &Pat,
        item: &Item,
        s: &Source,
        i: &Expr,
        out: &mut Bound,
    ) -> Result<(), String> {
        match (p, item) {
            (Pat::Wild, _) => Ok(()),
            (Pat::Bind { name, .. }, Item::Place) => {
                out.places.push(name.clone());
                Ok(())
            }
            (Pat::Bind { name, .. }, Item::Row) => {
                let (k, exact) = s.chunks.clone().expect("rows come from chunks");
                let start = Expr::Binary(BinOp::Mul, Box::new(i.clone()), Box::new(k.clone()));
                let len = if exact {
                    k
                } else {
                    let left = Expr::Binary(
                        BinOp::Sub,
                        Box::new(len_of(&s.target)),
                        Box::new(start.clone()),
                    );
                    method(k, "min", vec![left])
                };
                let view = method(var(&s.target), "sub", vec![start, len]);
                out.lets.push(let_stmt(name, view));
                out.rows.push(name.clone());
                Ok(())
            }
            (p, Item::Value(v)) => {
                out.lets.push(Stmt::Let {
                    pat: p.clone(),
                    ty: Type::Infer,
                    init: Some(v.clone()),
                });
                Ok(())
            }
            (Pat::Tuple(ps), Item::Pair(a, b)) if ps.len() == 2 => {
                self.bind_part(&ps[0], a, s, i, out)?;
                self.bind_part(&ps[1], b, s, i, out)
            }
            (Pat::Bind { .. }, Item::Pair(..)) => Err(
                "name the parts of the pair: `|(i, x)|` after `.enumerate()`, `|(x, y)|` after `.zip(ys)`"
                    .into(),
            ),
            _ => Err("this pattern does not match what the in-place form gives each iteration".into()),
        }
    }
}

/// The names an iteration's closure binds: elements written in place, rows (views), and
/// the `let`s of its values.
#[derive(Default)]
struct Bound {
    places: Vec<String>,
    rows: Vec<String>,
    lets: Vec<Stmt>,
}

/// Whether `e` is the source of an in-place form (a chain ending in one of its starts).
fn is_in_place(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::MethodCall(m) => {
            let n = m.method.to_string();
            n.ends_with("iter_mut")
                || n.ends_with("chunks_mut")
                || n.ends_with("chunks_exact_mut")
                || (matches!(n.as_str(), "enumerate" | "zip") && is_in_place(&m.receiver))
        }
        _ => false,
    }
}

/// The closure's body with its element reads and writes made tensor accesses: `x` is
/// `target.get([i])`, `x = v` is `target.set([i], v)`; `row[j]` is `row.get([j])` and
/// `row[j] = v` `row.set([j], v)`.
fn rewrite(e: &mut Expr, b: &Bound, target: &str, i: &str) {
    let element = || Expr::Array(vec![var(i)]);
    match e {
        Expr::Assign {
            target: place,
            value,
        } => {
            rewrite(value, b, target, i);
            match &mut **place {
                Expr::Var(x) if b.places.contains(x) => {
                    *e = method(var(target), "set", vec![element(), (**value).clone()]);
                }
                Expr::Index(row, j) if matches!(&**row, Expr::Var(r) if b.rows.contains(r)) => {
                    rewrite(j, b, target, i);
                    *e = method(
                        (**row).clone(),
                        "set",
                        vec![Expr::Array(vec![(**j).clone()]), (**value).clone()],
                    );
                }
                place => rewrite(place, b, target, i),
            }
        }
        Expr::Var(x) if b.places.contains(x) => {
            *e = method(var(target), "get", vec![element()]);
        }
        Expr::Index(row, j) if matches!(&**row, Expr::Var(r) if b.rows.contains(r)) => {
            rewrite(j, b, target, i);
            *e = method(
                (**row).clone(),
                "get",
                vec![Expr::Array(vec![(**j).clone()])],
            );
        }
        e => e.for_each_child_mut(&mut |c| rewrite(c, b, target, i)),
    }
}

fn var(name: &str) -> Expr {
    Expr::var(name)
}

fn len_of(name: &str) -> Expr {
    method(var(name), "len", vec![])
}

fn method(recv: Expr, name: &str, args: Vec<Expr>) -> Expr {
    Expr::Method {
        recv: Box::new(recv),
        method: name.into(),
        args,
    }
}

fn let_stmt(name: &str, init: Expr) -> Stmt {
    match let_in(name, init, Expr::Tuple(vec![])) {
        Expr::Block { mut stmts, .. } => stmts.remove(0),
        _ => unreachable!("let_in makes a block"),
    }
}
