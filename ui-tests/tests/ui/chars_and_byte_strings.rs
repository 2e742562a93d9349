use accel_runtime::prelude::*;

fn main() {
    let text: Vec<u8> = b"to be or not to be".to_vec();
    // A `char` where a byte is meant: the message says to write `b' '`.
    let _ = accelerate!(text.iter().filter(|&&c| c == ' ').count());
    // A byte string inside the site: bound outside, it is a captured sequence.
    let _ = accelerate!(map(|c: u8| c == b"xyz"[0], &text));
}
