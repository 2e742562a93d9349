//! Extraction, the paper's Algorithm 1: a site's program is the site plus the `#[accel]`
//! functions it reaches, transitively, each exactly once however often it is reached,
//! callees before callers. Functions the site does not reach are never looked at, so code
//! used only outside `accelerate!` may use anything Rust allows.
//!
//! Calls in the front end's IR name functions as the user wrote them (`add`, `geo::dist`);
//! extraction renames them to the unique names of the functions they resolved to.

use super::IrError;
use crate::expr::Expr;
use crate::program::{FnDef, Program, SiteDef};
use std::collections::HashMap;

/// Where extraction finds functions: the runtime implements this for the function
/// descriptions that `#[accel]` generates; tests implement it for a table.
pub trait FnSource: Sized {
    /// The name that identifies the function in the whole program (module path and name).
    fn unique_name(&self) -> String;
    /// The function's IR, with calls named as written.
    fn load(&self) -> Result<FnDef, IrError>;
    /// The functions its body calls or passes, keyed by the name as written.
    fn callees(&self) -> Vec<(String, Self)>;
}

/// Builds the program of `site`, whose body calls the functions in `callees` (keyed by the
/// name as written at the site).
pub fn extract<S: FnSource>(
    mut site: SiteDef,
    callees: Vec<(String, S)>,
) -> Result<Program, IrError> {
    let mut ex = Extractor {
        done: HashMap::new(),
        stack: Vec::new(),
        functions: Vec::new(),
    };
    let mut names = HashMap::new();
    for (written, callee) in callees {
        let unique = ex.visit(callee)?;
        names.insert(written, unique);
    }
    rename_calls(&mut site.body, &names)?;
    Ok(Program {
        functions: ex.functions,
        site,
        records: Vec::new(),
    })
}

struct Extractor {
    /// Unique names already extracted.
    done: HashMap<String, ()>,
    /// The functions being extracted, outermost first (to report cycles).
    stack: Vec<String>,
    functions: Vec<FnDef>,
}

impl Extractor {
    fn visit<S: FnSource>(&mut self, f: S) -> Result<String, IrError> {
        let unique = f.unique_name();
        if self.done.contains_key(&unique) {
            return Ok(unique);
        }
        if let Some(pos) = self.stack.iter().position(|n| *n == unique) {
            let mut cycle: Vec<&str> = self.stack[pos..].iter().map(String::as_str).collect();
            cycle.push(&unique);
            return Err(IrError::Recursion {
                cycle: cycle.join(" -> "),
            });
        }
        self.stack.push(unique.clone());
        let mut def = f.load()?;
        let mut names = HashMap::new();
        for (written, callee) in f.callees() {
            let callee_unique = self.visit(callee)?;
            names.insert(written, callee_unique);
        }
        rename_calls(&mut def.body, &names)?;
        def.name = unique.clone();
        self.stack.pop();
        self.done.insert(unique.clone(), ());
        self.functions.push(def);
        Ok(unique)
    }
}

fn rename_calls(e: &mut Expr, names: &HashMap<String, String>) -> Result<(), IrError> {
    let lookup = |name: &str| {
        names
            .get(name)
            .cloned()
            .ok_or_else(|| IrError::UnknownFunction {
                name: name.to_string(),
            })
    };
    match e {
        Expr::Call { func, .. } => *func = lookup(func)?,
        Expr::FnRef(name) => *name = lookup(name)?,
        _ => {}
    }
    let mut result = Ok(());
    e.for_each_child_mut(&mut |c| {
        if result.is_ok() {
            result = rename_calls(c, names);
        }
    });
    result
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::expr::{Loc, ParOp};
    use crate::program::Param;
    use crate::{Pat, Type};

    /// One function of a table: its unique name, body, and callees (as written, unique).
    pub(crate) type Row = (&'static str, Expr, Vec<(&'static str, &'static str)>);

    /// A table of functions.
    pub(crate) struct Table(pub Vec<Row>);

    #[derive(Clone, Copy)]
    pub(crate) struct Entry<'a>(pub &'a Table, pub &'static str);

    impl FnSource for Entry<'_> {
        fn unique_name(&self) -> String {
            self.1.to_string()
        }
        fn load(&self) -> Result<FnDef, IrError> {
            let (_, body, _) = self.0 .0.iter().find(|(n, ..)| *n == self.1).unwrap();
            Ok(FnDef {
                name: "as written".into(),
                params: vec![Param {
                    pat: Pat::bind("a"),
                    ty: Type::Infer,
                }],
                ret: Type::Infer,
                body: body.clone(),
                file: "src/lib.rs".into(),
                loc: Loc::default(),
            })
        }
        fn callees(&self) -> Vec<(String, Self)> {
            let (_, _, callees) = self.0 .0.iter().find(|(n, ..)| *n == self.1).unwrap();
            callees
                .iter()
                .map(|(w, u)| (w.to_string(), Entry(self.0, u)))
                .collect()
        }
    }

    pub(crate) fn call(f: &str, args: Vec<Expr>) -> Expr {
        Expr::Call {
            func: f.into(),
            args,
            loc: Loc::default(),
        }
    }

    pub(crate) fn site(body: Expr) -> SiteDef {
        SiteDef {
            file: "src/main.rs".into(),
            loc: Loc { line: 3, column: 4 },
            captures: vec!["v".into()],
            body,
        }
    }

    #[test]
    fn shared_functions_are_extracted_once_callees_first() {
        // site calls f and g; f calls h twice (as `h` and as `m::h`); g calls h; unused is never loaded.
        let t = Table(vec![
            (
                "crate::f",
                call("h", vec![call("m::h", vec![Expr::var("a")])]),
                vec![("h", "crate::m::h"), ("m::h", "crate::m::h")],
            ),
            (
                "crate::g",
                call("h", vec![Expr::var("a")]),
                vec![("h", "crate::m::h")],
            ),
            ("crate::m::h", Expr::var("a"), vec![]),
        ]);
        let body = Expr::par(
            ParOp::Map,
            vec![
                Expr::fn_ref("f"),
                Expr::par(ParOp::Map, vec![Expr::fn_ref("g"), Expr::var("v")]),
            ],
        );
        let p = extract(
            site(body),
            vec![
                ("f".into(), Entry(&t, "crate::f")),
                ("g".into(), Entry(&t, "crate::g")),
            ],
        )
        .unwrap();
        assert_eq!(
            p.function_names(),
            vec!["crate::m::h", "crate::f", "crate::g"]
        );
        assert_eq!(
            p.function("crate::f").unwrap().body.to_string(),
            "(crate::m::h (crate::m::h a))"
        );
        assert_eq!(p.site.body.to_string(), "(map crate::f (map crate::g v))");
    }

    #[test]
    fn recursion_is_reported_with_its_cycle() {
        let t = Table(vec![
            (
                "crate::even",
                call("odd", vec![]),
                vec![("odd", "crate::odd")],
            ),
            (
                "crate::odd",
                call("even", vec![]),
                vec![("even", "crate::even")],
            ),
        ]);
        let err = extract(
            site(Expr::var("v")),
            vec![("even".into(), Entry(&t, "crate::even"))],
        )
        .unwrap_err();
        assert_eq!(
            err,
            IrError::Recursion {
                cycle: "crate::even -> crate::odd -> crate::even".into()
            }
        );
    }

    #[test]
    fn a_call_missing_from_the_callee_table_is_an_error() {
        let t = Table(vec![("crate::f", call("nope", vec![]), vec![])]);
        let err = extract(
            site(Expr::var("v")),
            vec![("f".into(), Entry(&t, "crate::f"))],
        )
        .unwrap_err();
        assert_eq!(
            err,
            IrError::UnknownFunction {
                name: "nope".into()
            }
        );
    }
}
