//! Integers in decimal without the formatting machinery: `write!` costs a few hundred
//! instructions a number, and the API server's resourceVersions and shapes and a sweep's
//! `runs.csv` write them by the thousand.

/// `n` in decimal, written into `digits` (no allocation, no formatting machinery).
pub fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &str {
    // One digit (most of a sweep row's counts) from a table: no UTF-8 check of the buffer.
    if n < 10 {
        return &"0123456789"[n as usize..n as usize + 1];
    }
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&digits[i..]).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimal_is_display() {
        for n in [0, 1, 9, 10, 99, 100, 12_345, u32::MAX as u64, u64::MAX / 7, u64::MAX] {
            assert_eq!(super::decimal(n, &mut [0; 20]), n.to_string());
        }
    }
}
