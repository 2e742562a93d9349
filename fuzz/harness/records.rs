#[derive(Accel, Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub n: i64,
}

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
pub struct Px {
    pub a: f32,
    pub k: u32,
    pub on: bool,
}
