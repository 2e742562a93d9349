//! Building a batch and running its programs in every mode.

use std::collections::BTreeMap;
use std::process::Command;

use crate::batch::{self, Layout, Lines};
use crate::gen::Program;

/// What became of one program.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every mode agreed with debug mode.
    Ok,
    /// A mode's outcome differed from debug mode's (the text shows both).
    Mismatch { mode: String, detail: String },
    /// The process died while running the program (an abort or a signal).
    Crash { detail: String },
    /// The program did not compile (a generator or front-end bug: generated programs are
    /// meant to be accepted).
    Rejected { error: String },
    /// A mode's backend cannot compile a construct it uses (reported, not a mismatch).
    Unsupported { mode: String, detail: String },
}

impl Verdict {
    /// Whether this is a failure to reduce and report.
    pub fn failed(&self) -> bool {
        matches!(
            self,
            Verdict::Mismatch { .. } | Verdict::Crash { .. } | Verdict::Rejected { .. }
        )
    }

    /// The same kind of failure (a reduced program must keep failing the same way).
    pub fn same_failure(&self, other: &Verdict) -> bool {
        match (self, other) {
            (Verdict::Mismatch { mode: a, .. }, Verdict::Mismatch { mode: b, .. }) => a == b,
            (Verdict::Crash { .. }, Verdict::Crash { .. }) => true,
            // The same error, wherever it is.
            (Verdict::Rejected { error: a }, Verdict::Rejected { error: b }) => {
                let message = |e: &str| e.split_once(" error").map(|(_, m)| m.to_string());
                message(a) == message(b)
            }
            _ => false,
        }
    }
}

/// The verdicts a batch run printed, and why it died if it did not finish.
type Execution = (Vec<(usize, Verdict)>, Option<String>);

/// How to run batches.
#[derive(Clone, Debug)]
pub struct Runner {
    pub layout: Layout,
    /// The modes compared with debug mode (`cpu`, `cuda`).
    pub modes: Vec<String>,
    /// Build with the `cuda` feature (for the cuda mode).
    pub cuda: bool,
    /// Programs run at once.
    pub jobs: usize,
}

impl Runner {
    /// Builds `programs` as one batch and runs them: a verdict per program id. Programs
    /// that do not compile are set aside (rejected) and the rest built again; a crash
    /// is attributed to the program that was running and the rest run again.
    pub fn run(&self, programs: &[Program]) -> Result<BTreeMap<usize, Verdict>, String> {
        let mut verdicts = BTreeMap::new();
        let mut live: Vec<Program> = programs.to_vec();
        loop {
            let lines =
                batch::write(&self.layout, &live).map_err(|e| format!("writing the batch: {e}"))?;
            let rejected = self.build(&lines)?;
            if rejected.is_empty() {
                break;
            }
            for (id, error) in rejected {
                verdicts.insert(id, Verdict::Rejected { error });
                live.retain(|p| p.id != id);
            }
        }
        let mut pending: Vec<usize> = live.iter().map(|p| p.id).collect();
        let mut jobs = self.jobs;
        while !pending.is_empty() {
            let (done, crashed) = self.execute(&pending, jobs)?;
            for (id, v) in done {
                pending.retain(|p| *p != id);
                verdicts.insert(id, v);
            }
            match crashed {
                // Which of the programs in flight crashed is known only when they run one
                // at a time.
                Some(_) if jobs > 1 => jobs = 1,
                Some(detail) if !pending.is_empty() => {
                    let id = pending.remove(0);
                    verdicts.insert(id, Verdict::Crash { detail });
                }
                Some(detail) => {
                    return Err(format!("the batch failed after its last program: {detail}"))
                }
                None => break,
            }
        }
        Ok(verdicts)
    }

    /// Builds the batch; returns the programs with compile errors (by id, with the first
    /// error), or an error when the build fails elsewhere.
    fn build(&self, lines: &[Lines]) -> Result<Vec<(usize, String)>, String> {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.arg("build")
            .arg("--manifest-path")
            .arg(self.layout.dir.join("Cargo.toml"))
            .args(["--message-format", "short"])
            .env("CARGO_TARGET_DIR", self.layout.target());
        if self.cuda {
            cmd.args(["--features", "cuda"]);
        }
        let out = cmd.output().map_err(|e| format!("running cargo: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return Ok(Vec::new());
        }
        let mut rejected: BTreeMap<usize, String> = BTreeMap::new();
        for line in stderr.lines() {
            let Some(rest) = line.strip_prefix("src/main.rs:") else {
                continue;
            };
            if !line.contains("error") {
                continue;
            }
            let number: usize = rest
                .split(':')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            match lines.iter().find(|l| (l.first..=l.last).contains(&number)) {
                Some(l) => {
                    rejected.entry(l.id).or_insert_with(|| line.to_string());
                }
                None => return Err(format!("the batch does not build:\n{stderr}")),
            }
        }
        if rejected.is_empty() {
            return Err(format!("the batch does not build:\n{stderr}"));
        }
        Ok(rejected.into_iter().collect())
    }

    /// Runs the built batch on `ids`: the verdicts it printed, and the reason it died if
    /// it did not finish.
    fn execute(&self, ids: &[usize], jobs: usize) -> Result<Execution, String> {
        let exe = self
            .layout
            .target()
            .join("debug")
            .join(self.layout.package());
        let only: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--modes",
            &self.modes.join(","),
            "--only",
            &only.join(","),
            "--jobs",
            &jobs.to_string(),
        ]);
        for (key, _) in std::env::vars() {
            // The emulator's settings stay: its compiler, seed and number of GPUs.
            if key.starts_with("ACCEL_")
                && key != "ACCEL_EMULATOR_CXX"
                && key != "ACCEL_EMULATOR_SEED"
                && key != "ACCEL_CUDA_EMULATOR_DEVICES"
            {
                cmd.env_remove(key);
            }
        }
        let out = cmd
            .output()
            .map_err(|e| format!("running {}: {e}", exe.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let verdicts = parse(&stdout);
        let crashed = (!out.status.success()).then(|| {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            format!(
                "{} ({})",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )
        });
        Ok((verdicts, crashed))
    }
}

/// The verdict lines a batch printed.
fn parse(stdout: &str) -> Vec<(usize, Verdict)> {
    let mut out: Vec<(usize, Verdict)> = Vec::new();
    for line in stdout.lines() {
        if let Some(detail) = line.strip_prefix("  ") {
            if let Some((_, Verdict::Mismatch { detail: d, .. })) = out.last_mut() {
                d.push_str(detail);
                d.push('\n');
            }
            continue;
        }
        let mut words = line.splitn(4, ' ');
        let (Some("P"), Some(id), Some(kind)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let Ok(id) = id.parse() else { continue };
        let rest = words.next().unwrap_or("").to_string();
        let verdict = match kind {
            "ok" => Verdict::Ok,
            "MISMATCH" => Verdict::Mismatch {
                mode: rest,
                detail: String::new(),
            },
            _ => {
                let (mode, detail) = rest.split_once(": ").unwrap_or((&rest, ""));
                Verdict::Unsupported {
                    mode: mode.to_string(),
                    detail: detail.to_string(),
                }
            }
        };
        out.push((id, verdict));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines_parse() {
        let out = "P 3 ok\nP 4 MISMATCH cpu\n  debug: [1, 2]\n  cpu: [1, 3]\nP 5 unsupported cuda: the cuda backend cannot compile x\n";
        let v = parse(out);
        assert_eq!(v[0], (3, Verdict::Ok));
        assert_eq!(
            v[1],
            (
                4,
                Verdict::Mismatch {
                    mode: "cpu".into(),
                    detail: "debug: [1, 2]\ncpu: [1, 3]\n".into()
                }
            )
        );
        assert_eq!(
            v[2],
            (
                5,
                Verdict::Unsupported {
                    mode: "cuda".into(),
                    detail: "the cuda backend cannot compile x".into()
                }
            )
        );
    }
}
