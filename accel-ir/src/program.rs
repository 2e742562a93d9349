//! Functions, sites and assembled programs.

use crate::expr::{Expr, Loc, Pat};
use crate::types::Type;
use serde::{Deserialize, Serialize};

/// A parameter of an `#[accel]` function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The parameter's pattern.
    pub pat: Pat,
    /// Its declared type.
    pub ty: Type,
}

/// An `#[accel]` function, as the front end translated it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FnDef {
    /// The unique name of the function in the program (its module path and name,
    /// `crate::physics::step`).
    pub name: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its declared result type.
    pub ret: Type,
    /// Its body.
    pub body: Expr,
    /// Where the function is defined.
    pub file: String,
    /// Where in the file it is.
    pub loc: Loc,
}

impl FnDef {
    /// Whether the function takes or returns a function (forbidden in imperative code).
    pub fn is_higher_order(&self) -> bool {
        self.ret.is_fn() || self.params.iter().any(|p| p.ty.is_fn())
    }
}

/// One `accelerate!` site: its expression and the locals it captures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteDef {
    /// The file of the site.
    pub file: String,
    /// Where in the file it is.
    pub loc: Loc,
    /// The captured locals, in first-use order; the runtime marshals them.
    pub captures: Vec<String>,
    /// The marked expression.
    pub body: Expr,
}

/// A site together with exactly the functions it reaches, each once, callees before callers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// The functions the site reaches, each once.
    pub functions: Vec<FnDef>,
    /// The site.
    pub site: SiteDef,
    /// The records the site and its functions name (as `Type::Record`s), which values
    /// captured or returned may not carry: a site may build a record and pass it on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<Type>,
}

impl Program {
    /// The names of the program's functions, in order.
    pub fn function_names(&self) -> Vec<&str> {
        self.functions.iter().map(|f| f.name.as_str()).collect()
    }

    /// The function with the given name.
    pub fn function(&self, name: &str) -> Option<&FnDef> {
        self.functions.iter().find(|f| f.name == name)
    }
}
