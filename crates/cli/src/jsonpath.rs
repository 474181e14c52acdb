//! kubectl's `-o jsonpath=TEMPLATE`: text with `{...}` holes, each a path in kubectl's form
//! (`{.metadata.name}`, `{.items[*].status.phase}`) evaluated as an RFC 9535 JSONPath
//! (serde_json_path). Several matches are joined by spaces, strings print as they are and anything
//! else as JSON, as kubectl prints them; `{"\n"}` is a literal. kubectl's `range`/`end` blocks
//! are refused with the path that does the same.

use serde_json::Value;
use serde_json_path::JsonPath;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The RFC 9535 form of the path (checked when the template was read).
    Path(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Reads a template; what is wrong with it, for a usage error.
    pub fn parse(template: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let hole = &rest[open + 1..];
            let close =
                closing_brace(hole).ok_or_else(|| format!("jsonpath {template:?}: a '{{' is not closed"))?;
            parts.push(part(hole[..close].trim(), template)?);
            rest = &hole[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// The template filled from `value`.
    pub fn render(&self, value: &Value) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Path(path) => {
                    // Checked by `parse`: an unparsable path cannot reach here.
                    let Ok(path) = JsonPath::parse(path) else { continue };
                    let found: Vec<String> = path.query(value).all().into_iter().map(printed).collect();
                    out.push_str(&found.join(" "));
                }
            }
        }
        out
    }
}

/// The end of a hole: its `}`, outside any quoted string.
fn closing_brace(hole: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in hole.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(at),
            _ => {}
        }
    }
    None
}

fn part(hole: &str, template: &str) -> Result<Part, String> {
    if let Some(literal) = hole.strip_prefix('"').and_then(|h| h.strip_suffix('"')) {
        return Ok(Part::Text(unescape(literal)));
    }
    if hole.starts_with("range") || hole == "end" {
        return Err(format!(
            "jsonpath {template:?}: range/end is not supported; {{.items[*].metadata.name}} prints every match, separated by spaces"
        ));
    }
    let path = match hole.chars().next() {
        Some('.') | Some('[') => format!("${hole}"),
        Some('$') => hole.to_string(),
        _ => {
            return Err(format!(
                "jsonpath {template:?}: {{{hole}}} is not a path (one starts with '.', as {{.metadata.name}})"
            ));
        }
    };
    JsonPath::parse(&path).map_err(|error| format!("jsonpath {template:?}: {{{hole}}}: {error}"))?;
    Ok(Part::Path(path))
}

fn unescape(literal: &str) -> String {
    let mut out = String::new();
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

fn printed(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(template: &str, value: &Value) -> String {
        Template::parse(template).unwrap().render(value)
    }

    #[test]
    fn paths_in_kubectls_form_fill_the_holes_as_kubectl_prints_them() {
        let resize = json!({"metadata": {"name": "grow"}, "status": {"phase": "Running",
            "plan": [{"replica": 0, "step": "WarmCopy"}, {"replica": 1, "step": "Copied"}]}});
        assert_eq!(render("{.metadata.name}", &resize), "grow");
        assert_eq!(
            render("{.metadata.name} is {.status.phase}{\"\\n\"}", &resize),
            "grow is Running\n"
        );
        assert_eq!(render("{.status.plan[*].step}", &resize), "WarmCopy Copied");
        assert_eq!(
            render("{.status.plan[0]}", &resize),
            r#"{"replica":0,"step":"WarmCopy"}"#
        );
        assert_eq!(render("{.status.plan[?@.step=='Copied'].replica}", &resize), "1");
        assert_eq!(render("{.nothing}", &resize), "");
        let list =
            json!({"kind": "List", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]});
        assert_eq!(render("{.items[*].metadata.name}", &list), "a b");
        assert_eq!(render("{$.kind}", &list), "List");
    }

    #[test]
    fn templates_kubectl_would_take_differently_are_refused_with_the_way_that_works() {
        for (template, says) in [
            ("{.metadata.name", "not closed"),
            ("{metadata.name}", "is not a path"),
            (
                "{range .items[*]}{.metadata.name}{end}",
                "range/end is not supported",
            ),
            ("{.status.plan[}", "{.status.plan[}"),
        ] {
            let error = Template::parse(template).unwrap_err();
            assert!(error.contains(says), "{template}: {error}");
        }
        // A brace inside a quoted literal is text, not the end of the hole.
        assert_eq!(render("{\"}\"}", &json!({})), "}");
    }
}
