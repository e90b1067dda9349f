//! How numbers, sizes and names are written for people: one place for the helpers every
//! command's output shares.

/// `1234567` → `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An estimated wall time as a person reads it: `under a second`, `about 12 s`, `about 7 min`,
/// `about 2.5 h`, `about 3 days`.
pub fn rough_seconds(seconds: f64) -> String {
    if seconds < 1.0 {
        "under a second".to_string()
    } else if seconds < 90.0 {
        format!("about {seconds:.0} s")
    } else if seconds < 5400.0 {
        format!("about {:.0} min", seconds / 60.0)
    } else if seconds < 2.0 * 86400.0 {
        format!("about {:.1} h", seconds / 3600.0)
    } else {
        format!("about {:.0} days", seconds / 86400.0)
    }
}

pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.0} MB", n as f64 / (1u64 << 20) as f64),
        n => format!("{:.0} kB", n as f64 / 1024.0),
    }
}

pub fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect()
}

pub fn pretty_json(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("json");
    s.push('\n');
    s
}

/// The description up to its first full stop, for one-line listings.
pub fn first_sentence(text: &str) -> String {
    let line = text.replace('\n', " ");
    match line.find(". ") {
        Some(i) => line[..=i].to_string(),
        None => line,
    }
}
