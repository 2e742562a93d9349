//! What the macros generate for each `accelerate!` site and `#[accel]` function:
//! descriptions holding their IR and the facts the compile-time checks need, and those
//! checks, evaluated by rustc as constants in the code `accelerate!` generates (the
//! classification, the per-backend rules across `#[accel]` function boundaries, the
//! absence of recursion). Program assembly from the descriptions is [`crate::assembly`].

use crate::accel_type::Inspect;
use accel_ir::Type;

/// One use of a parallel operation in a body, at a line and column of its file.
#[derive(Debug, Clone, Copy)]
pub struct OpUse {
    /// The operation's name.
    pub op: &'static str,
    /// Whether it is imperative (`parallel_loop`).
    pub imperative: bool,
    /// Its line.
    pub line: u32,
    /// Its column (0-based).
    pub column: u32,
}

/// The description `#[accel]` generates beside a function: its IR and the facts that the
/// compile-time checks of the sites that reach it need.
#[derive(Debug)]
pub struct FnDesc {
    /// The function's name.
    pub name: &'static str,
    /// The function's full path (`my_crate::physics::step`), which names it in programs.
    pub path: &'static str,
    /// Its file.
    pub file: &'static str,
    /// Its line.
    pub line: u32,
    /// The function's IR (`accel_ir::FnDef`) as JSON.
    pub ir: &'static str,
    /// The functions the body calls or passes, keyed by the path as written.
    pub callees: &'static [(&'static str, &'static FnDesc)],
    /// The parallel operations the body uses directly.
    pub ops: &'static [OpUse],
    /// Whether it takes or returns a function.
    pub higher_order: bool,
    /// The constants the body names, by name, with their values.
    pub consts: &'static [(&'static str, &'static (dyn Inspect + Sync))],
    /// The types of the records the function names.
    pub records: &'static [fn() -> Type],
}

/// The description of one `accelerate!` site.
#[derive(Debug)]
pub struct SiteDesc {
    /// The site's file.
    pub file: &'static str,
    /// Its line.
    pub line: u32,
    /// Its column (0-based).
    pub column: u32,
    /// The site's IR (`accel_ir::SiteDef`) as JSON.
    pub ir: &'static str,
    /// The functions the site calls or passes, keyed by the path as written.
    pub callees: &'static [(&'static str, &'static FnDesc)],
    /// The parallel operations the site uses directly.
    pub ops: &'static [OpUse],
    /// The types of the records the site names.
    pub records: &'static [fn() -> Type],
}

// ---------------------------------------------------------------------------------------
// Compile-time checks, evaluated by rustc as constants in the code `accelerate!` generates.

/// A message assembled during constant evaluation (no allocation there).
struct Msg {
    buf: [u8; 1024],
    len: usize,
}

impl Msg {
    const fn new() -> Msg {
        Msg {
            buf: [0; 1024],
            len: 0,
        }
    }

    const fn s(mut self, s: &str) -> Msg {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && self.len < self.buf.len() {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn n(mut self, mut n: u32) -> Msg {
        let mut digits = [0u8; 10];
        let mut k = 0;
        loop {
            digits[k] = b'0' + (n % 10) as u8;
            k += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        while k > 0 && self.len < self.buf.len() {
            k -= 1;
            self.buf[self.len] = digits[k];
            self.len += 1;
        }
        self
    }

    const fn fail(self) -> ! {
        let (bytes, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(bytes) {
            Ok(s) => panic!("{}", s),
            Err(_) => panic!("accelerated code was rejected"),
        }
    }
}

/// A parallel operation found in a program, and the function it is in (`None`: the site).
#[derive(Clone, Copy)]
struct Found {
    op: OpUse,
    owner: Option<&'static FnDesc>,
}

const fn first_op(
    ops: &'static [OpUse],
    callees: &'static [(&'static str, &'static FnDesc)],
    owner: Option<&'static FnDesc>,
    imperative: bool,
    depth: u32,
) -> Option<Found> {
    if depth as usize > MAX_DEPTH {
        return None;
    }
    let mut i = 0;
    while i < ops.len() {
        if ops[i].imperative == imperative {
            return Some(Found { op: ops[i], owner });
        }
        i += 1;
    }
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if let Some(found) = first_op(f.ops, f.callees, Some(f), imperative, depth + 1) {
            return Some(found);
        }
        i += 1;
    }
    None
}

/// Whether a function reached from `callees` failed to compile (its companion carries no IR).
const fn reaches_rejected(
    callees: &'static [(&'static str, &'static FnDesc)],
    depth: usize,
) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if f.ir.is_empty() || reaches_rejected(f.callees, depth + 1) {
            return true;
        }
        i += 1;
    }
    false
}

/// The first function reached from `callees` that breaks the imperative rules.
const fn first_imperative_violation(
    callees: &'static [(&'static str, &'static FnDesc)],
    depth: u32,
) -> Option<&'static FnDesc> {
    if depth as usize > MAX_DEPTH {
        return None;
    }
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if f.higher_order {
            return Some(f);
        }
        if let Some(v) = first_imperative_violation(f.callees, depth + 1) {
            return Some(v);
        }
        i += 1;
    }
    None
}

const fn where_(m: Msg, site: &SiteDesc, found: Found) -> Msg {
    let m = m.s(found.op.op);
    let (file, m) = match found.owner {
        Some(f) => (f.file, m.s(" in fn `").s(f.name).s("`")),
        None => (site.file, m),
    };
    m.s(" at ")
        .s(file)
        .s(":")
        .n(found.op.line)
        .s(":")
        .n(found.op.column + 1)
}

const fn site_head(site: &SiteDesc) -> Msg {
    Msg::new()
        .s("accelerate! at ")
        .s(site.file)
        .s(":")
        .n(site.line)
        .s(":")
        .n(site.column + 1)
        .s(" ")
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn same_fn(a: &FnDesc, b: &FnDesc) -> bool {
    str_eq(a.path, b.path)
}

/// The longest call chain compile-time checks follow.
const MAX_DEPTH: usize = 48;

/// A call chain reached from the site, to detect recursion.
struct Chain {
    fns: [Option<&'static FnDesc>; MAX_DEPTH],
    len: usize,
}

/// Finds a cycle among the functions reachable from `callees`; on return `chain` holds the
/// path from the site into the cycle, ending with the function that closes it.
const fn find_cycle(
    callees: &'static [(&'static str, &'static FnDesc)],
    chain: &mut Chain,
) -> bool {
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if chain.len == MAX_DEPTH {
            return true;
        }
        let mut k = 0;
        while k < chain.len {
            if let Some(g) = chain.fns[k] {
                if same_fn(f, g) {
                    chain.fns[chain.len] = Some(f);
                    chain.len += 1;
                    return true;
                }
            }
            k += 1;
        }
        chain.fns[chain.len] = Some(f);
        chain.len += 1;
        if find_cycle(f.callees, chain) {
            return true;
        }
        chain.len -= 1;
        i += 1;
    }
    false
}

/// The compile-time classification and per-backend rules of a site, across `#[accel]`
/// function boundaries (the paper's section 4.2 and the imperative backend's rules), and
/// the absence of recursion. A violation stops compilation with a message naming the
/// functions and operations involved and where they are.
pub const fn check_site(site: &'static SiteDesc) {
    let mut chain = Chain {
        fns: [None; MAX_DEPTH],
        len: 0,
    };
    let cyclic = find_cycle(site.callees, &mut chain);
    // The walks below follow calls without memory; they terminate because there is no
    // cycle. A function that was rejected with its own error ends the checks quietly.
    if !cyclic && reaches_rejected(site.callees, 0) {
        return;
    }
    if cyclic {
        let mut m = site_head(site)
            .s("reaches recursive functions, which accelerated code does not support: ");
        let mut k = 0;
        while k < chain.len {
            if let Some(f) = chain.fns[k] {
                if k > 0 {
                    m = m.s(" -> ");
                }
                m = m.s(f.name);
            }
            k += 1;
        }
        m.s(". Rewrite the recursion as a `while` loop").fail()
    }
    let functional = first_op(site.ops, site.callees, None, false, 0);
    let imperative = first_op(site.ops, site.callees, None, true, 0);
    match (functional, imperative) {
        (None, None) => site_head(site)
            .s("uses no parallel operation (map, map2, reduce, scan, flatten, create or parallel_loop), ")
            .s("neither directly nor through the #[accel] functions it calls: it would run sequentially. ")
            .s("Use a parallel operation, or remove accelerate!")
            .fail(),
        (Some(f), Some(i)) => {
            let m = site_head(site).s("mixes functional operations (");
            let m = where_(m, site, f).s(") with parallel_loop (");
            where_(m, site, i).s("). One site runs on one backend: split it into two accelerate! sites").fail()
        }
        (None, Some(_)) => {
            if let Some(f) = first_imperative_violation(site.callees, 0) {
                site_head(site)
                    .s("uses parallel_loop (imperative code, which has no function values), but fn `")
                    .s(f.name)
                    .s("` at ")
                    .s(f.file)
                    .s(":")
                    .n(f.line)
                    .s(" takes or returns a function: call the function it needs directly instead")
                    .fail()
            }
        }
        (Some(_), None) => {}
    }
}
