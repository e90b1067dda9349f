//! Text bound for a terminal that came from elsewhere — a holder identity in a real cluster's
//! dump, a scenario's name or description — is printed with its control characters escaped, so an
//! ESC sequence or a carriage return in it cannot repaint the screen or forge a healthy line.

use std::borrow::Cow;

/// Characters a terminal acts on instead of showing: C0 and C1 controls, DEL, and the bidi
/// overrides that reorder what follows them.
fn dangerous(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| dangerous(c) && !(keep_newlines && c == '\n')) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' if keep_newlines => out.push('\n'),
            c if dangerous(c) => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// One line for a terminal: every control character escaped (a newline too: a line stays one).
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// A block of lines for a terminal: control characters escaped, its own line breaks kept.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_carriage_returns_cannot_forge_a_line() {
        let forged = "evil\r\u{1b}[2Klease-a holder=ok";
        assert_eq!(printable(forged), "evil\\r\\u{1b}[2Klease-a holder=ok");
        assert_eq!(printable("a\nb"), "a\\nb");
        assert_eq!(printable_lines("a\nb\u{7}"), "a\nb\\u{7}");
        assert_eq!(printable("plain café"), "plain café");
        assert_eq!(printable("\u{202e}txt.exe"), "\\u{202e}txt.exe");
    }
}
