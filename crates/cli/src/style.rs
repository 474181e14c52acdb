//! Colors on a terminal, plain text otherwise. The escapes are anstyle's; whether to write them
//! is anstream's convention, overridden by `--color`.

use crate::args::ColorChoice;
use anstyle::{AnsiColor, Effects};
use ferry_api::Phase;

/// How a piece of text is shown when colors are on; [`NONE`] for plain.
pub type Paint = anstyle::Style;

/// Whether `stream` gets colors when nobody said (`NO_COLOR`, `CLICOLOR`, `CLICOLOR_FORCE`, `TERM`
/// and whether it is a terminal, as anstream reads them).
fn colors_by_convention(stream: &impl anstream::stream::RawStream) -> bool {
    matches!(
        anstream::AutoStream::choice(stream),
        anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

pub const NONE: Paint = Paint::new();
pub const RED: Paint = AnsiColor::Red.on_default();
pub const GREEN: Paint = AnsiColor::Green.on_default();
pub const YELLOW: Paint = AnsiColor::Yellow.on_default();
pub const CYAN: Paint = AnsiColor::Cyan.on_default();
pub const BOLD: Paint = Paint::new().effects(Effects::BOLD);
pub const DIM: Paint = Paint::new().effects(Effects::DIMMED);

impl Style {
    pub const PLAIN: Style = Style { color: false };

    /// Colors on stdout when asked to; with `auto`, by the ecosystem's convention (anstream, as
    /// clap and cargo): on a terminal unless `NO_COLOR` is set or `TERM=dumb`; `CLICOLOR=0` turns
    /// them off, `CLICOLOR_FORCE` on even when piped.
    pub fn detect(choice: ColorChoice) -> Style {
        Style::decide(choice, colors_by_convention(&std::io::stdout()))
    }

    /// The same for stderr (errors and warnings).
    pub fn detect_stderr(choice: ColorChoice) -> Style {
        Style::decide(choice, colors_by_convention(&std::io::stderr()))
    }

    /// `--color always|never` win; `auto` is what the convention says for the stream.
    pub fn decide(choice: ColorChoice, convention: bool) -> Style {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => convention,
        };
        Style { color }
    }

    pub fn paint(&self, paint: Paint, text: &str) -> String {
        if self.color && paint != NONE {
            format!("{paint}{text}{paint:#}")
        } else {
            text.to_string()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint(BOLD, text)
    }
}

/// The color a phase is shown in.
pub fn phase_color(phase: Phase) -> Paint {
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
        assert!(Style::decide(ColorChoice::Auto, true).color);
        assert!(!Style::decide(ColorChoice::Auto, false).color);
        assert!(Style::decide(ColorChoice::Always, false).color);
        assert!(!Style::decide(ColorChoice::Never, true).color);
    }

    #[test]
    fn painting() {
        assert_eq!(Style::PLAIN.paint(RED, "x"), "x");
        // The same bytes the CLI wrote by hand before anstyle.
        assert_eq!(Style { color: true }.paint(RED, "x"), "\x1b[31mx\x1b[0m");
        assert_eq!(Style { color: true }.paint(BOLD, "x"), "\x1b[1mx\x1b[0m");
        assert_eq!(Style { color: true }.paint(NONE, "x"), "x");
        assert_eq!(phase_color(Phase::Failed), RED);
        assert_eq!(Phase::RollingBack.as_str(), "RollingBack");
    }
}
