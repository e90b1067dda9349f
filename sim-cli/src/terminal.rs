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

/// Whether to colour what goes to standard output: a terminal, and no `NO_COLOR`
/// (no-color.org); never a file or a pipe.
pub fn stdout_in_colour() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The summary table's verdicts in colour: `PASS` green, `FAIL` bold red (only the expectation
/// lines begin with them; the text was made printable first, so no other escape is in it).
pub fn colour_verdicts(table: &str) -> String {
    table
        .split_inclusive('\n')
        .map(|line| {
            if let Some(rest) = line.strip_prefix("  PASS  ") {
                format!("  \u{1b}[32mPASS\u{1b}[0m  {rest}")
            } else if let Some(rest) = line.strip_prefix("  FAIL  ") {
                format!("  \u{1b}[1;31mFAIL\u{1b}[0m  {rest}")
            } else {
                line.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_coloured_and_nothing_else() {
        let table = "expectations\n  PASS  a > 1   (a = 2)\n  FAIL  b < 1   (b = 3)\nreplay: PASS  x\n";
        let coloured = colour_verdicts(table);
        assert_eq!(
            coloured,
            "expectations\n  \u{1b}[32mPASS\u{1b}[0m  a > 1   (a = 2)\n  \u{1b}[1;31mFAIL\u{1b}[0m  b < 1   (b = 3)\nreplay: PASS  x\n"
        );
    }

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
