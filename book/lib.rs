//! The accel user guide, `book/src/*.md`, as doctests: `cargo test -p accel-book` compiles
//! and runs every Rust example in it (blocks marked `rust`; `text`, `toml` and `sh` ones
//! are shown only). `tests/links.rs` checks the table of contents and the links between
//! chapters. `mdbook build book` renders it.

macro_rules! chapters {
    ($($name:ident: $file:literal),* $(,)?) => {$(
        #[cfg(doctest)]
        #[doc = include_str!(concat!("src/", $file))]
        pub struct $name;
    )*};
}

chapters!(
    Introduction: "introduction.md",
    GettingStarted: "getting-started.md",
    Contract: "contract.md",
    Cookbook: "cookbook.md",
    Modes: "modes.md",
    Errors: "errors.md",
    Ndarray: "ndarray.md",
    DebugMode: "debug-mode.md",
    Performance: "performance.md",
    Cuda: "cuda.md",
    Devices: "devices.md",
    Distributed: "distributed.md",
    CaseStudies: "case-studies.md",
    Inspecting: "inspecting.md",
    Fuzzing: "fuzzing.md",
    Design: "design.md",
    Layout: "layout.md",
);
