//! What a dry run prints. YAML (the default): the objects as documents, each headed by comments
//! naming what it was made from and the notes about it; objects that gave nothing are listed, with
//! their notes, in the comments before the first document — so the file a reviewer reads holds
//! everything, and `kubectl apply -f` of it applies the objects. JSON: a `v1` `List` of the
//! objects, the notes on stderr (JSON has no comments).

use super::{Report, Translation};
use crate::exit::CliError;

/// Comment lines are wrapped to this width.
const WIDTH: usize = 100;

pub fn yaml(report: &Report) -> Result<String, CliError> {
    let mut out = String::new();
    let count = report.objects().count();
    comment(
        &mut out,
        "",
        &format!(
            "kubectl ferry import -f {}: {count} Ferry object(s) from {} object(s) of other systems; a \
             dry run, nothing was sent to the cluster (--apply creates them)",
            report.file,
            report.translations.iter().filter(|t| t.system.is_some()).count()
        ),
    );
    let empty: Vec<&Translation> = report
        .translations
        .iter()
        .filter(|t| t.objects.is_empty())
        .collect();
    if !empty.is_empty() {
        comment(&mut out, "", "Nothing made from:");
        for translation in empty {
            comment(&mut out, "  ", &format!("- {}:", heading(translation)));
            for note in &translation.notes {
                comment(&mut out, "      ", &format!("- {note}"));
            }
        }
    }
    for translation in report.translations.iter().filter(|t| !t.objects.is_empty()) {
        for (index, object) in translation.objects.iter().enumerate() {
            out.push_str("---\n");
            comment(&mut out, "", &format!("From {}.", heading(translation)));
            if index == 0 {
                for note in &translation.notes {
                    comment(&mut out, "  ", &format!("- {note}"));
                }
            }
            let text = yaml_serde::to_string(&object.to_value()?)
                .map_err(|e| CliError::Failed(format!("cannot render YAML: {e}")))?;
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// `StatefulSet apps/web (apps/v1), vshn's statefulset-resize-controller`.
fn heading(translation: &Translation) -> String {
    match translation.system {
        Some(system) => format!("{}, {}", translation.source, system.label()),
        None => format!("{}, not imported", translation.source),
    }
}

/// Appends `text` as comment lines: `# ` and `indent`, wrapped at [`WIDTH`], continuation lines
/// indented two more.
fn comment(out: &mut String, indent: &str, text: &str) {
    let mut line = format!("# {indent}");
    let start = line.len();
    for word in text.split_whitespace() {
        if line.len() > start && line.len() + 1 + word.len() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("# {indent}  ");
        }
        if !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

pub fn json(report: &Report) -> Result<String, CliError> {
    let items = report
        .objects()
        .map(|o| o.to_value())
        .collect::<Result<Vec<_>, _>>()?;
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    serde_json::to_string_pretty(&list)
        .map(|text| text + "\n")
        .map_err(|e| CliError::Failed(format!("cannot render JSON: {e}")))
}

/// The notes as stderr lines: `note: <source>, <system>: <note>`.
pub fn note_lines(report: &Report) -> Vec<String> {
    report
        .translations
        .iter()
        .flat_map(|t| {
            t.notes
                .iter()
                .map(move |note| format!("note: {}: {note}", heading(t)))
        })
        .collect()
}

/// One line for stderr after the YAML.
pub fn summary(report: &Report) -> String {
    let objects = report.objects().count();
    let without = report
        .translations
        .iter()
        .filter(|t| t.system.is_some() && t.objects.is_empty())
        .count();
    let unknown = report.translations.iter().filter(|t| t.system.is_none()).count();
    let mut parts = vec![format!("import: {objects} Ferry object(s) printed")];
    if without > 0 {
        parts.push(format!("{without} object(s) of other systems gave none"));
    }
    if unknown > 0 {
        parts.push(format!("{unknown} not recognised"));
    }
    format!(
        "{}; the notes are in the comments (a dry run: nothing was sent)",
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_wrap_at_the_width_and_indent_their_continuation() {
        let mut out = String::new();
        let text = "word ".repeat(40);
        comment(&mut out, "  ", &text);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1);
        assert!(
            lines.iter().all(|l| l.len() <= WIDTH && l.starts_with("#   ")),
            "{out}"
        );
        assert!(lines[1].starts_with("#     word"), "{out}");
        // A word longer than the width stays whole.
        let mut out = String::new();
        comment(&mut out, "", &"x".repeat(120));
        assert_eq!(out, format!("# {}\n", "x".repeat(120)));
    }
}
