//! Item-by-item comparison of two sides of an evaluation (e.g. original vs rephrased questions).
pub mod stats;
