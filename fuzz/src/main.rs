//! `cargo run --release -p accel-fuzz -- --seed S --programs N`: generates N programs,
//! runs each in debug mode, on the CPU and in the cuda mode (the emulator here, a GPU when
//! there is one), compares, reduces each mismatch to a small program and saves it as a
//! regression test in `fuzz/tests/regressions.rs`. Prints `N programs, M mismatches`.

use std::time::Instant;

use accel_fuzz::batch::{workspace_root, Layout};
use accel_fuzz::choices::{splitmix, Choices};
use accel_fuzz::gen::{generate, Program};
use accel_fuzz::reduce::reduce;
use accel_fuzz::run::{Runner, Verdict};

const USAGE: &str = "usage: accel-fuzz [--seed S] [--programs N] [--batch B] [--jobs J] [--modes cpu,llvm,cuda,devices,ranks] [--no-cuda-build] [--no-reduce] [--no-save] [--show ID]";

struct Options {
    seed: u64,
    programs: usize,
    batch: usize,
    modes: Vec<String>,
    cuda: bool,
    reduce: bool,
    save: bool,
    show: Option<usize>,
    jobs: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        seed: 1,
        programs: 100,
        batch: 250,
        modes: vec!["cpu".into(), "llvm".into(), "cuda".into()],
        cuda: true,
        reduce: true,
        save: true,
        show: None,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut k = 0;
    while k < args.len() {
        let value = |k: usize| {
            args.get(k + 1)
                .ok_or_else(|| format!("{} needs a value\n{USAGE}", args[k]))
        };
        let number = |k: usize| {
            value(k)?
                .parse::<u64>()
                .map_err(|e| format!("{}: {e}\n{USAGE}", args[k]))
        };
        match args[k].as_str() {
            "--seed" => o.seed = number(k)?,
            "--programs" => o.programs = number(k)? as usize,
            "--batch" => o.batch = (number(k)? as usize).max(1),
            "--modes" => o.modes = value(k)?.split(',').map(String::from).collect(),
            "--show" => o.show = Some(number(k)? as usize),
            "--jobs" => o.jobs = (number(k)? as usize).max(1),
            "--no-cuda-build" => {
                o.cuda = false;
                k -= 1;
            }
            "--no-reduce" => {
                o.reduce = false;
                k -= 1;
            }
            "--no-save" => {
                o.save = false;
                k -= 1;
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
        k += 2;
    }
    Ok(o)
}

/// Program `id` of the run seeded `seed` (each program has its own choices, so any one is
/// regenerated alone).
fn program(seed: u64, id: usize) -> Program {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ id as u64;
    generate(id, &mut Choices::random(splitmix(&mut state)))
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Some(id) = o.show {
        println!("{}", program(o.seed, id).source);
        return;
    }
    let runner = Runner {
        layout: Layout::new(&format!("seed{}", o.seed)),
        modes: o.modes.clone(),
        cuda: o.cuda,
        jobs: o.jobs,
    };
    let started = Instant::now();
    let (mut mismatches, mut unsupported, mut done) = (Vec::new(), 0, 0);
    for start in (0..o.programs).step_by(o.batch) {
        let programs: Vec<Program> = (start..(start + o.batch).min(o.programs))
            .map(|id| program(o.seed, id))
            .collect();
        let verdicts = match runner.run(&programs) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("accel-fuzz: {e}");
                std::process::exit(2);
            }
        };
        for p in &programs {
            match verdicts.get(&p.id) {
                Some(v) if v.failed() => {
                    eprintln!("program {} failed: {v:?}", p.id);
                    mismatches.push((p.clone(), v.clone()));
                }
                Some(Verdict::Unsupported { mode, detail }) => {
                    eprintln!("program {}: unsupported in {mode}: {detail}", p.id);
                    unsupported += 1;
                }
                Some(_) => {}
                None => eprintln!("program {}: no verdict", p.id),
            }
        }
        done += programs.len();
        eprintln!(
            "[{:.0} s] {done} programs, {} mismatches, {unsupported} unsupported",
            started.elapsed().as_secs_f64(),
            mismatches.len()
        );
    }
    for (p, v) in &mismatches {
        let (small, verdict) = if o.reduce {
            eprintln!("reducing program {} ({} bytes)", p.id, p.source.len());
            let layout = Layout::new(&format!("seed{}-reduce", o.seed));
            let reducer = Runner {
                layout,
                ..runner.clone()
            };
            reduce(&reducer, p, v, true).unwrap_or_else(|e| {
                eprintln!("accel-fuzz: reducing: {e}");
                (p.clone(), v.clone())
            })
        } else {
            (p.clone(), v.clone())
        };
        eprintln!(
            "program {} reduced ({} bytes): {verdict:?}\n{}",
            p.id,
            small.source.len(),
            small.source
        );
        if o.save {
            match save(o.seed, &small, &verdict) {
                Ok(path) => eprintln!("saved as a regression test in {path}"),
                Err(e) => eprintln!("accel-fuzz: saving: {e}"),
            }
        }
    }
    println!(
        "{} programs, {} mismatches ({unsupported} unsupported in a mode, {:.0} s)",
        o.programs,
        mismatches.len(),
        started.elapsed().as_secs_f64()
    );
    if !mismatches.is_empty() {
        std::process::exit(1);
    }
}

/// Appends `p` to `fuzz/tests/regressions.rs` as a module with a test.
fn save(seed: u64, p: &Program, verdict: &Verdict) -> std::io::Result<String> {
    let path = workspace_root().join("fuzz/tests/regressions.rs");
    let mut text = std::fs::read_to_string(&path)?;
    let name = format!("seed{seed}_program{}", p.id);
    if text.contains(&format!("mod {name} ")) {
        return Ok(format!("{} (already there)", path.display()));
    }
    let what = format!("{verdict:?}").replace('\n', " ");
    let what: String = what.chars().take(300).collect();
    let indented: String = p
        .source
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("    {l}\n")
            }
        })
        .collect();
    text.push_str(&format!(
        "\n// `accel-fuzz --seed {seed}`, program {id}, reduced; it gave: {what}\nmod {name} {{\n    use super::*;\n\n{indented}\n    #[test]\n    fn agrees_in_every_mode() {{\n        check({id}, || support::outcome(program_{id}));\n    }}\n}}\n",
        id = p.id
    ));
    std::fs::write(&path, text)?;
    Ok(path.display().to_string())
}
