//! The book's structure: every chapter is in the table of contents and every file the
//! table names exists; every link between chapters names a chapter that exists and, with a
//! `#fragment`, a heading in it (mdBook's anchors: lowercase, punctuation dropped, spaces as
//! dashes); no chapter points at files outside the repository's book (`../shared`).

use std::collections::BTreeSet;
use std::path::Path;

fn src() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
}

fn chapter(name: &str) -> String {
    std::fs::read_to_string(src().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The targets of the markdown links `[text](target)` in `text` (code blocks skipped).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(k) = rest.find("](") {
            let after = &rest[k + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// mdBook's anchor for a heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

fn summary_files() -> Vec<String> {
    links(&chapter("SUMMARY.md"))
}

#[test]
fn every_chapter_is_in_the_table_of_contents_and_exists() {
    let listed: BTreeSet<String> = summary_files().into_iter().collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .collect();
    assert_eq!(listed, on_disk);
}

#[test]
fn links_between_chapters_resolve() {
    let mut broken = Vec::new();
    for file in summary_files() {
        let text = chapter(&file);
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            if target.contains("shared/") {
                broken.push(format!("{file}: {target} is outside the repository"));
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.clone()
            } else {
                path.to_string()
            };
            if !src().join(&linked).exists() {
                broken.push(format!("{file}: no chapter {linked}"));
                continue;
            }
            if let Some(f) = fragment {
                if !anchors(&chapter(&linked)).contains(f) {
                    broken.push(format!("{file}: no heading #{f} in {linked}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_mdbook() {
    assert_eq!(
        anchor(" The corpus: ordinary programs"),
        "the-corpus-ordinary-programs"
    );
    assert_eq!(
        anchor("Errors as values: `try_accelerate!`"),
        "errors-as-values-try_accelerate"
    );
}
