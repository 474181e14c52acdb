//! Writing to stdout without panicking when the reader goes away (`kubectl ferry list | head -1`):
//! like a Unix tool killed by SIGPIPE, the plugin then stops quietly. Data (`-o json|yaml|…`) too.

use crate::args::DataFormat;
use crate::exit::CliError;
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

/// Prints `value` as `-o json|yaml|name|jsonpath=…` asks (`name`: `volumeresize.ferry.dev/NAME`).
pub fn print_data<T: serde::Serialize>(value: &T, format: &DataFormat) -> Result<(), CliError> {
    let text = match format {
        DataFormat::Name => {
            let value =
                serde_json::to_value(value).map_err(|e| CliError::Failed(format!("cannot render: {e}")))?;
            let name = value["metadata"]["name"].as_str().unwrap_or_default().to_string();
            format!("volumeresize.ferry.dev/{name}\n")
        }
        DataFormat::Json => serde_json::to_string_pretty(value)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(|e| CliError::Failed(format!("cannot render JSON: {e}")))?,
        DataFormat::Yaml => {
            yaml_serde::to_string(value).map_err(|e| CliError::Failed(format!("cannot render YAML: {e}")))?
        }
        // As kubectl: the filled template and nothing after it.
        DataFormat::JsonPath(template) => {
            let value =
                serde_json::to_value(value).map_err(|e| CliError::Failed(format!("cannot render: {e}")))?;
            template.render(&value)
        }
    };
    crate::out!("{text}");
    Ok(())
}
