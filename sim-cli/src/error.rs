//! The one error type of every command: what to tell the user, and the exit code.

/// A command's failure, already rendered for a person (an input error reads `file:line:col:
/// message`, then the line), with the exit code it ends the process with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub message: String,
    pub code: u8,
}

impl CliError {
    /// Bad input or an I/O problem.
    pub const INPUT: u8 = 2;
    /// The answer is "no" (a lab step failed, a check did not hold).
    pub const NO: u8 = 1;

    /// Bad input or an I/O problem: exit 2.
    pub fn input(message: impl Into<String>) -> Self {
        CliError { message: message.into(), code: Self::INPUT }
    }

    /// The command ran and the answer is "no": exit 1.
    pub fn no(message: impl Into<String>) -> Self {
        CliError { message: message.into(), code: Self::NO }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}
