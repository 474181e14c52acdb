//! Colors on a terminal, plain text otherwise.

use crate::args::ColorChoice;
use ferry_api::Phase;
use std::io::IsTerminal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

pub const RED: &str = "31";
pub const GREEN: &str = "32";
pub const YELLOW: &str = "33";
pub const CYAN: &str = "36";
pub const BOLD: &str = "1";
pub const DIM: &str = "2";

impl Style {
    pub const PLAIN: Style = Style { color: false };

    /// Colors when asked to, or on a terminal without `NO_COLOR`.
    pub fn detect(choice: ColorChoice) -> Style {
        Style::decide(
            choice,
            std::io::stdout().is_terminal(),
            std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        )
    }

    pub fn decide(choice: ColorChoice, terminal: bool, no_color: bool) -> Style {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color,
        };
        Style { color }
    }

    pub fn paint(&self, code: &str, text: &str) -> String {
        if self.color && !code.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint(BOLD, text)
    }
}

/// The color a phase is shown in.
pub fn phase_color(phase: Phase) -> &'static str {
    match phase {
        Phase::Succeeded => GREEN,
        Phase::Failed => RED,
        Phase::Running | Phase::Planning => CYAN,
        Phase::Pending | Phase::Paused | Phase::RollingBack => YELLOW,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors_only_when_wanted() {
        assert!(Style::decide(ColorChoice::Auto, true, false).color);
        assert!(!Style::decide(ColorChoice::Auto, false, false).color);
        assert!(!Style::decide(ColorChoice::Auto, true, true).color);
        assert!(Style::decide(ColorChoice::Always, false, true).color);
        assert!(!Style::decide(ColorChoice::Never, true, false).color);
    }

    #[test]
    fn painting() {
        assert_eq!(Style::PLAIN.paint(RED, "x"), "x");
        assert_eq!(Style { color: true }.paint(RED, "x"), "\x1b[31mx\x1b[0m");
        assert_eq!(phase_color(Phase::Failed), RED);
        assert_eq!(Phase::RollingBack.as_str(), "RollingBack");
    }
}
