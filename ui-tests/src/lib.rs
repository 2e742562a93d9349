//! The cases live in `tests/ui`: each `*.rs` there is one rejection rule and its `.stderr`
//! the reviewed message; `tests/pass` holds programs that must compile and run.
