#![allow(unreachable_code)]
use accel_runtime::prelude::*;

#[derive(Accel)]
enum Shape {
    Circle,
}

#[derive(Accel)]
struct Pair(f32, f32);

#[derive(Accel)]
struct Named {
    name: String,
    weight: f32,
}

fn main() {}
