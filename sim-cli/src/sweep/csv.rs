//! The little CSV this crate needs (RFC 4180 quoting; no field ever holds a newline), written by
//! hand rather than pulling in a crate for two functions.

/// A field, quoted when it holds a comma, a quote or a line break.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

/// One record (no trailing newline) from fields.
pub fn record<S: AsRef<str>>(fields: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_field(&mut out, f.as_ref());
    }
    out
}

/// Appends `text` to `out` as [`field`] quotes it (the caller writes the commas).
pub fn push_field(out: &mut String, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// Splits one line into fields, undoing [`field`]'s quoting. (A sweep's summary reads every
/// row back: a field that is not quoted is taken whole, not a character at a time.)
pub fn parse_line(line: &str) -> Vec<String> {
    parse_first(line, usize::MAX)
}

/// The first `n` fields of a line (all of them if it has fewer), as [`parse_line`] splits it.
pub fn parse_first(line: &str, n: usize) -> Vec<String> {
    let mut fields = Vec::new();
    let mut rest = line;
    while fields.len() < n {
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut current = String::new();
            let mut chars = quoted.char_indices().peekable();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' if chars.peek().is_some_and(|&(_, n)| n == '"') => {
                        chars.next();
                        current.push('"');
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    _ => current.push(c),
                }
            }
            // What follows the closing quote, up to the comma, belongs to the field too.
            let after = &quoted[end..];
            let stop = after.find(',').unwrap_or(after.len());
            current.push_str(&after[..stop]);
            fields.push(current);
            match after.get(stop + 1..) {
                Some(next) => rest = next,
                None => return fields,
            }
        } else {
            match rest.split_once(',') {
                Some((field, next)) => {
                    fields.push(field.to_string());
                    rest = next;
                }
                None => {
                    fields.push(rest.to_string());
                    return fields;
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips() {
        let fields = ["a", "b,c", "say \"hi\"", "", "leasesim run x --set 'a=1,2'"];
        assert_eq!(parse_line(&record(fields)), fields);
        for fields in [&["", ""][..], &[""], &["\"", ","], &["x", "", "\"\"\"", "a,\"b\",c", ""]] {
            assert_eq!(parse_line(&record(fields)), fields, "{fields:?}");
        }
    }

    /// The field-at-a-time reader splits every line as the character-at-a-time one it
    /// replaced did, on well-formed and malformed lines alike (a quote inside an unquoted
    /// field, text after a closing quote, a quote never closed).
    #[test]
    fn lines_split_as_character_by_character() {
        fn by_chars(line: &str) -> Vec<String> {
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
        let alphabet = ['a', ',', '"', 'é'];
        let mut line = String::new();
        // Every line of up to six characters over the alphabet.
        let mut stack = vec![0usize; 0];
        loop {
            line.clear();
            line.extend(stack.iter().map(|&i| alphabet[i]));
            let all = by_chars(&line);
            assert_eq!(parse_line(&line), all, "{line:?}");
            for n in 0..4 {
                assert_eq!(parse_first(&line, n), all[..n.min(all.len())], "{line:?}, {n} fields");
            }
            // The next line in counting order.
            let mut k = stack.len();
            loop {
                if k == 0 {
                    if stack.len() == 6 {
                        return;
                    }
                    stack = vec![0; stack.len() + 1];
                    break;
                }
                k -= 1;
                stack[k] += 1;
                if stack[k] < alphabet.len() {
                    break;
                }
                stack[k] = 0;
            }
        }
    }
}
