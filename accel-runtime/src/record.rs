//! The site record (`ACCEL_RECORD=FILE`): every site that ran in a compiled mode, with its
//! assembled program and its captured and result types, kept in a JSON file meant to be
//! committed beside the code like a lock file. `build.rs` generates the CUDA kernels of
//! every recorded site from it (the `build` module, feature `cuda`) and embeds them in the
//! binary.
//!
//! The file holds one entry per site and combination of types, sorted; recording again
//! replaces an entry (and keeps the others, so every test binary of a crate can add to
//! one record). Each entry carries a hash of its program: a site edited since it was
//! recorded no longer matches its entry, which the embedded bundle reports as stale.

use crate::backend::dump::{fnv1a, write_file};
use accel_ir::{Program, Type};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A record file's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The accel version that wrote it.
    pub accel: String,
    /// The recorded sites, sorted by site and signature.
    pub sites: Vec<RecordedSite>,
}

/// One site with one combination of captured and result types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedSite {
    /// `src/main.rs:12:5`.
    pub site: String,
    /// The types, as a reader sees them: `(v: [f64], k: i64) -> f64`.
    pub signature: String,
    /// [`program_hash`] of `program`: what tells a stale entry.
    pub program_hash: String,
    /// The captured values (the functions' constants included) with their types, in
    /// marshaling order.
    pub captures: Vec<(String, Type)>,
    /// The site's result type.
    pub result: Type,
    /// The site's assembled program: itself and the `#[accel]` functions it reaches.
    pub program: Program,
}

/// The hash that identifies a site's assembled program, as hexadecimal.
pub fn program_hash(program: &Program) -> String {
    let json = serde_json::to_string(program).unwrap_or_default();
    format!("{:016x}", fnv1a(&[json.as_bytes()]))
}

/// `(v: [f64], k: i64) -> f64`.
pub fn signature(captures: &[(String, Type)], result: &Type) -> String {
    let params: Vec<String> = captures.iter().map(|(n, t)| format!("{n}: {t}")).collect();
    format!("({}) -> {result}", params.join(", "))
}

impl Record {
    /// An empty record of this accel version.
    pub fn new() -> Record {
        Record {
            accel: env!("CARGO_PKG_VERSION").to_string(),
            sites: Vec::new(),
        }
    }

    /// Reads a record file.
    pub fn read(path: &Path) -> Result<Record, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the site record {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not an accel site record: {e}", path.display()))
    }

    /// Adds `entry`, replacing the entry of the same site and signature; keeps the order.
    pub fn insert(&mut self, entry: RecordedSite) {
        let key = |e: &RecordedSite| (e.site.clone(), e.signature.clone());
        match self.sites.binary_search_by_key(&key(&entry), key) {
            Ok(at) => self.sites[at] = entry,
            Err(at) => self.sites.insert(at, entry),
        }
    }

    /// The file's text: pretty JSON, one line per field, ending in a newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl Default for Record {
    fn default() -> Self {
        Record::new()
    }
}

/// The file `ACCEL_RECORD` names, if any.
pub fn record_path() -> Option<PathBuf> {
    std::env::var_os("ACCEL_RECORD")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Adds a site that ran to the record file at `path` (read, updated, written back whole;
/// one writer at a time in this process). A file that is not a record is left alone.
pub fn add(path: &Path, entry: RecordedSite) -> Result<(), String> {
    static WRITING: Mutex<()> = Mutex::new(());
    let _one_writer = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let mut record = if path.exists() {
        Record::read(path)?
    } else {
        Record::new()
    };
    if record.sites.contains(&entry) {
        return Ok(());
    }
    record.accel = env!("CARGO_PKG_VERSION").to_string();
    record.insert(entry);
    write_file(path, &record.to_text())
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{Expr, Lit, Loc, ScalarType, SiteDef};

    fn entry(site: &str, ty: ScalarType, value: u64) -> RecordedSite {
        let program = Program {
            functions: vec![],
            records: vec![],
            site: SiteDef {
                file: "src/main.rs".into(),
                loc: Loc::default(),
                captures: vec!["x".into()],
                body: Expr::Lit(Lit::Int(value, None)),
            },
        };
        let captures = vec![("x".to_string(), Type::Scalar(ty))];
        let result = Type::Scalar(ScalarType::I64);
        RecordedSite {
            site: site.into(),
            signature: signature(&captures, &result),
            program_hash: program_hash(&program),
            captures,
            result,
            program,
        }
    }

    #[test]
    fn entries_are_sorted_and_replaced_by_site_and_signature() {
        let mut r = Record::new();
        r.insert(entry("src/main.rs:9:5", ScalarType::I64, 1));
        r.insert(entry("src/main.rs:3:5", ScalarType::F64, 1));
        r.insert(entry("src/main.rs:3:5", ScalarType::I32, 1));
        r.insert(entry("src/main.rs:9:5", ScalarType::I64, 2));
        let keys: Vec<(&str, &str)> = r
            .sites
            .iter()
            .map(|e| (e.site.as_str(), e.signature.as_str()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("src/main.rs:3:5", "(x: f64) -> i64"),
                ("src/main.rs:3:5", "(x: i32) -> i64"),
                ("src/main.rs:9:5", "(x: i64) -> i64"),
            ]
        );
        assert_eq!(r.sites[2].program.site.body, Expr::Lit(Lit::Int(2, None)));
        assert_ne!(
            r.sites[2].program_hash,
            entry("", ScalarType::I64, 1).program_hash
        );
    }

    #[test]
    fn the_file_reads_back_as_written() {
        let dir = std::env::temp_dir().join(format!("accel-record-{}", std::process::id()));
        let path = dir.join("sites.json");
        add(&path, entry("src/a.rs:1:1", ScalarType::I64, 7)).unwrap();
        add(&path, entry("src/a.rs:1:1", ScalarType::I64, 7)).unwrap();
        add(&path, entry("src/a.rs:2:1", ScalarType::I64, 7)).unwrap();
        let r = Record::read(&path).unwrap();
        assert_eq!(r.sites.len(), 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r.to_text());
        std::fs::write(&path, "{").unwrap();
        let e = add(&path, entry("src/a.rs:3:1", ScalarType::I64, 7)).unwrap_err();
        assert!(
            e.ends_with(
                "is not an accel site record: EOF while parsing an object at line 1 column 1"
            ),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
