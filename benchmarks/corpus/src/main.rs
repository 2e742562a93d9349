//! The corpus run: every program's forms timed side by side, interleaved (accel, rayon,
//! sequential, and the library where there is one, in turn), medians and ratios in one
//! table. The accel form runs in `cpu` mode (or, `--mode cuda` with the `cuda` feature, on
//! the GPU), so a site the backend cannot compile is an error in the table, never a silent
//! sequential run; `--mode default` runs it in the mode nothing chose (with the `cuda`
//! feature and a GPU: each site on the faster of the GPU and the CPU, see the guide's
//! Modes chapter), where a site that falls back says so on stderr.
//!
//! `cargo run --release -p accel-corpus -- [--only NAME[,NAME..]] [--quick] [--mode cpu|cuda|default] [--out DIR]`

use accel_corpus::{programs, Case, Form, Scale};
use accel_runtime::prelude::*;
use std::time::Instant;

/// What one program measured.
struct Row {
    name: &'static str,
    group: &'static str,
    size: String,
    /// Medians in ms, by form; `None` when the form failed (see `error`).
    accel: Option<f64>,
    rayon: f64,
    sequential: f64,
    library: Option<(&'static str, f64)>,
    /// The accel form's first call minus its median: compilation, mostly.
    first_extra: f64,
    runs: usize,
    error: Option<String>,
}

fn time<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let start = Instant::now();
    let r = std::hint::black_box(f());
    (r, start.elapsed().as_secs_f64() * 1e3)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The mode the accel forms run in: `--mode cpu` (the default) or `--mode cuda`; `None`
/// for `--mode default`, the mode nothing chose.
static MODE: std::sync::OnceLock<Option<Mode>> = std::sync::OnceLock::new();

fn accel(case: &dyn Case) -> Result<Box<dyn std::any::Any>, String> {
    let mode = *MODE.get().unwrap_or(&Some(Mode::Cpu));
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match mode {
        Some(mode) => with_mode(mode, || case.run(Form::Accel)),
        None => case.run(Form::Accel),
    }));
    run.map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into())
    })
}

fn measure(
    name: &'static str,
    group: &'static str,
    case: &dyn Case,
    budget_ms: f64,
    max_runs: usize,
) -> Row {
    let (want, seq_first) = time(|| case.run(Form::Sequential));
    let (rayon_out, rayon_first) = time(|| case.run(Form::Rayon));
    if let Err(e) = case.check(&*rayon_out, &*want) {
        panic!("{name}: the rayon form disagrees with the sequential one: {e}");
    }
    drop(rayon_out);
    let library = case.library_name();
    if library.is_some() {
        let out = case.run(Form::Library);
        if let Err(e) = case.check(&*out, &*want) {
            panic!("{name}: the library disagrees with the sequential form: {e}");
        }
    }
    let (first, accel_first) = time(|| accel(case));
    let error = match &first {
        Err(e) => Some(e.clone()),
        Ok(out) => case
            .check(&**out, &*want)
            .err()
            .map(|e| format!("wrong result: {e}")),
    };
    drop(first);
    drop(want);
    // As many interleaved rounds as fit the budget, from the first calls' times.
    let round_ms = seq_first + rayon_first + if error.is_none() { accel_first } else { 0.0 };
    let runs = ((budget_ms / round_ms.max(1e-3)) as usize).clamp(3, max_runs);
    let (mut a, mut r, mut s, mut l) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        if error.is_none() {
            a.push(time(|| accel(case)).1);
        }
        r.push(time(|| case.run(Form::Rayon)).1);
        s.push(time(|| case.run(Form::Sequential)).1);
        if library.is_some() {
            l.push(time(|| case.run(Form::Library)).1);
        }
    }
    let accel = (error.is_none()).then(|| median(a));
    Row {
        name,
        group,
        size: case.size(),
        accel,
        rayon: median(r),
        sequential: median(s),
        library: library.map(|n| (n, median(l))),
        first_extra: accel.map_or(0.0, |m| (accel_first - m).max(0.0)),
        runs,
        error,
    }
}

fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| program | group | size | accel ms | rayon ms | sequential ms | accel / rayon | accel / sequential | first call extra ms |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let (a, ar, asq) = match r.accel {
            Some(a) => (
                format!("{a:.2}"),
                format!("{:.2}x", a / r.rayon),
                format!("{:.2}x", a / r.sequential),
            ),
            None => ("error".into(), "-".into(), "-".into()),
        };
        t += &format!(
            "| {} | {} | {} | {a} | {:.2} | {:.2} | {ar} | {asq} | {:.1} |\n",
            r.name, r.group, r.size, r.rayon, r.sequential, r.first_extra
        );
    }
    let libraries: Vec<&Row> = rows.iter().filter(|r| r.library.is_some()).collect();
    if !libraries.is_empty() {
        t += "\n| program | library | library ms | accel / library |\n|---|---|---:|---:|\n";
        for r in libraries {
            let (name, ms) = r.library.unwrap();
            let ratio = r.accel.map_or("-".into(), |a| format!("{:.2}x", a / ms));
            t += &format!("| {} | {name} | {ms:.2} | {ratio} |\n", r.name);
        }
    }
    let errors: Vec<&Row> = rows.iter().filter(|r| r.error.is_some()).collect();
    if !errors.is_empty() {
        t += "\nErrors:\n\n";
        for r in errors {
            t += &format!("- {}: {}\n", r.name, r.error.as_deref().unwrap_or(""));
        }
    }
    t
}

fn summary(rows: &[Row]) -> String {
    let timed: Vec<&Row> = rows.iter().filter(|r| r.accel.is_some()).collect();
    let slower_than_seq = timed
        .iter()
        .filter(|r| r.accel.unwrap() > r.sequential)
        .count();
    let slower_than_rayon = timed.iter().filter(|r| r.accel.unwrap() > r.rayon).count();
    let geomean = |f: &dyn Fn(&Row) -> f64| {
        (timed.iter().map(|r| f(r).ln()).sum::<f64>() / timed.len().max(1) as f64).exp()
    };
    format!(
        "{} programs, {} ran: accel slower than sequential on {slower_than_seq}, slower than rayon on {slower_than_rayon}; geometric mean accel / rayon {:.2}x, accel / sequential {:.2}x.\n",
        rows.len(),
        timed.len(),
        geomean(&|r| r.accel.unwrap() / r.rayon),
        geomean(&|r| r.accel.unwrap() / r.sequential),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let quick = args.iter().any(|a| a == "--quick");
    let mode = match value("--mode").as_deref() {
        None | Some("cpu") => Some(Mode::Cpu),
        Some("cuda") => Some(Mode::Cuda),
        Some("default") => None,
        Some(other) => {
            eprintln!("corpus: --mode {other}: the modes are cpu, cuda and default");
            std::process::exit(2);
        }
    };
    MODE.set(mode).expect("the mode is set once");
    let out_dir = value("--out");
    let only: Option<Vec<String>> =
        value("--only").map(|s| s.split(',').map(str::to_string).collect());
    if only.is_some() && out_dir.is_some() {
        eprintln!("corpus: --only runs part of the corpus, whose results --out must not replace");
        std::process::exit(2);
    }
    let all = programs();
    for wanted in only.iter().flatten() {
        if !all.iter().any(|p| p.name == wanted) {
            let names: Vec<&str> = all.iter().map(|p| p.name).collect();
            eprintln!(
                "corpus: no program `{wanted}`; the programs are {}",
                names.join(", ")
            );
            std::process::exit(2);
        }
    }
    let (budget_ms, max_runs) = if quick { (1500.0, 5) } else { (6000.0, 11) };
    let mut rows = Vec::new();
    for p in all {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == p.name))
        {
            continue;
        }
        let case = (p.make)(Scale::Bench);
        let row = measure(p.name, p.group.name(), &*case, budget_ms, max_runs);
        match row.accel {
            Some(a) => eprintln!(
                "{}: accel {a:.2} ms, rayon {:.2} ms, sequential {:.2} ms ({:.2}x rayon, {:.2}x sequential; {} runs)",
                row.name,
                row.rayon,
                row.sequential,
                a / row.rayon,
                a / row.sequential,
                row.runs
            ),
            None => eprintln!(
                "{}: accel failed: {}",
                row.name,
                row.error.as_deref().unwrap_or("")
            ),
        }
        rows.push(row);
    }
    let threads = accel_runtime::num_threads();
    let (mode_name, stem) = match mode {
        Some(Mode::Cuda) => ("cuda", "corpus-cuda"),
        None => ("default", "corpus-default"),
        Some(_) => ("cpu", "corpus"),
    };
    let preamble = format!(
        "One run of `cargo run --release -p accel-corpus{}{}` on {threads} thread(s). Medians of interleaved runs (accel in the `{mode_name}` mode, rayon, sequential, each in turn); ratios below 1 mean accel is faster. \"first call extra\" is the accel form's first call minus its median: compiling its sites.\n\n",
        if mode_name != "cpu" { " --features cuda" } else { "" },
        match (quick, mode_name) {
            (false, "cpu") => String::new(),
            (quick, name) => format!(" --{}{}", if quick { " --quick" } else { "" }, if name != "cpu" { format!(" --mode {name}") } else { String::new() }),
        }
    );
    let text = format!("{preamble}{}\n{}", summary(&rows), table(&rows));
    println!("{text}");
    if let Some(dir) = out_dir {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {dir}: {e}"));
        std::fs::write(
            format!("{dir}/{stem}.md"),
            format!("# The corpus\n\n{text}"),
        )
        .unwrap_or_else(|e| panic!("cannot write {dir}/{stem}.md: {e}"));
        let json: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "program": r.name, "group": r.group, "size": r.size,
                    "accel_ms": r.accel, "rayon_ms": r.rayon, "sequential_ms": r.sequential,
                    "library": r.library.map(|l| l.0), "library_ms": r.library.map(|l| l.1),
                    "first_call_extra_ms": r.first_extra, "runs": r.runs, "error": r.error,
                })
            })
            .collect();
        std::fs::write(
            format!("{dir}/{stem}.json"),
            serde_json::to_string_pretty(&json).expect("rows serialize"),
        )
        .unwrap_or_else(|e| panic!("cannot write {dir}/{stem}.json: {e}"));
    }
}
