//! Black-Scholes pricing of a book of 2^23 random European options, call and put, with the
//! classic suite's inputs and pricing function
//! (`accel_examples::classic::{option_book, black_scholes_option}`: prices in [5, 30),
//! strikes in [1, 100), maturities in [0.25, 5) years, 2% rate, 30% volatility). The
//! sequential form maps the options in a loop, the rayon form with `into_par_iter`, the
//! accel form with `create` over the options. The test size is 1001 options.

use crate::check::close;
use crate::{Program, Scale};
use accel_examples::classic::{black_scholes_option, option_book};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct BlackScholes {
    price: Vec<f32>,
    strike: Vec<f32>,
    years: Vec<f32>,
}

impl BlackScholes {
    pub fn new(scale: Scale) -> BlackScholes {
        let (price, strike, years) = option_book(scale.pick(1001, 1 << 23));
        BlackScholes {
            price,
            strike,
            years,
        }
    }
}

impl Program for BlackScholes {
    type Output = Vec<(f32, f32)>;

    fn size(&self) -> String {
        format!("{} options", self.price.len())
    }

    fn sequential(&self) -> Vec<(f32, f32)> {
        (0..self.price.len())
            .map(|i| black_scholes_option(self.price[i], self.strike[i], self.years[i]))
            .collect()
    }

    fn rayon(&self) -> Vec<(f32, f32)> {
        (0..self.price.len())
            .into_par_iter()
            .map(|i| black_scholes_option(self.price[i], self.strike[i], self.years[i]))
            .collect()
    }

    fn accel(&self) -> Vec<(f32, f32)> {
        let (price, strike, years) = (&self.price, &self.strike, &self.years);
        accelerate!(create(price.len(), |i| black_scholes_option(
            price[i], strike[i], years[i]
        )))
    }

    fn check(&self, got: &Vec<(f32, f32)>, want: &Vec<(f32, f32)>) -> Result<(), String> {
        // The same operations in every form, but the compiled `exp` and `ln` round
        // differently from the standard library's in the last bits, which the put's
        // difference of two prices of up to 100 magnifies: 6e-6 absolute at most at 2^23
        // options on the CPU backend. Prices are judged absolutely below 1.
        let flat =
            |v: &Vec<(f32, f32)>| -> Vec<f32> { v.iter().flat_map(|&(c, p)| [c, p]).collect() };
        close(&flat(got), &flat(want), 1e-4, 1.0)
    }
}
