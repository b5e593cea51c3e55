//! The one numeric rule of verification: two runs computed the same numbers when every value
//! differs by at most [`VERIFY_TOLERANCE`] relative to the largest magnitude. Used by the
//! verification gate (`blazec verify`, `tune`, `doctor`) and by a user's captured step.

/// "Equal within f32 rounding": 2.6x above the largest legitimate rounding difference measured
/// between Burn's fused and unfused kernels (2.34e-6 on the H200, 3.9e-6 on lavapipe), orders
/// of magnitude below a real defect.
pub const VERIFY_TOLERANCE: f32 = 1e-5;

/// Largest absolute difference relative to the largest magnitude in `a`.
pub fn max_rel_diff(a: &[f32], b: &[f32]) -> f32 {
    let scale = a.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-6);
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / scale).fold(0f32, f32::max)
}

/// Whether `b` computed `a`'s numbers: same length, all finite, within the tolerance.
pub fn same_numbers(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && b.iter().all(|x| x.is_finite()) && max_rel_diff(a, b) <= VERIFY_TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_relative_to_the_largest_magnitude() {
        assert_eq!(max_rel_diff(&[2.0, 1.0], &[2.0, 1.0]), 0.0);
        assert!((max_rel_diff(&[2.0, 1.0], &[2.0, 1.1]) - 0.05).abs() < 1e-6);
        assert!(same_numbers(&[1.0, 2.0], &[1.0, 2.000001]));
        assert!(!same_numbers(&[1.0, 2.0], &[1.0, 2.001]));
        assert!(!same_numbers(&[1.0], &[f32::NAN]) && !same_numbers(&[1.0], &[1.0, 1.0]));
    }
}
