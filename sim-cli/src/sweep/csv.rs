//! The little CSV this crate needs (RFC 4180 quoting; no field ever holds a newline), written by
//! hand rather than pulling in a crate for two functions.

/// A field, quoted when it holds a comma, a quote or a line break.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

/// One record (no trailing newline) from fields.
pub fn record<S: AsRef<str>>(fields: impl IntoIterator<Item = S>) -> String {
    fields.into_iter().map(|f| field(f.as_ref())).collect::<Vec<_>>().join(",")
}

/// Splits one line into fields, undoing [`field`]'s quoting.
pub fn parse_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                current.push('"');
            }
            (true, '"') => quoted = false,
            (false, '"') if current.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    fields.push(current);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips() {
        let fields = ["a", "b,c", "say \"hi\"", "", "leasesim run x --set 'a=1,2'"];
        assert_eq!(parse_line(&record(fields)), fields);
    }
}
