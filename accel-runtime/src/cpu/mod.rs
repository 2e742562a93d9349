//! The CPU backend: Cranelift JIT code over chunks of the index space on all cores.

pub mod abi;
