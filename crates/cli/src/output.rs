//! Writing to stdout without panicking when the reader goes away (`kubectl ferry list | head -1`):
//! like a Unix tool killed by SIGPIPE, the plugin then stops quietly.

use std::io::Write;

/// Writes to stdout; when the pipe is closed, exits with code 0 (nobody is left to read the rest).
pub fn write(args: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    if let Err(error) = out.write_fmt(args).and_then(|()| out.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {error}");
    }
}

/// `print!` that stops quietly on a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*)) };
}

/// `println!` that stops quietly on a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write(format_args!("{}\n", format_args!($($arg)*))) };
}
