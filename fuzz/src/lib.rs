//! accel-fuzz: random accel programs, run in every mode and compared.
//!
//! Each program is generated from a recorded sequence of random choices
//! ([`choices::Choices`]) by a typed generator ([`gen`]); a batch of programs is written into
//! one crate ([`batch`]) that is built once and runs each program in debug mode, on the CPU
//! and in the cuda mode (a GPU when there is one, else the emulator), comparing outcomes
//! ([`run`]); a program whose outcomes differ is reduced by simplifying its choices
//! ([`reduce`]) and saved as a regression test.

pub mod batch;
pub mod choices;
pub mod gen;
pub mod reduce;
pub mod run;
