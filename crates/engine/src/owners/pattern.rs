//! Names as patterns: `prometheus-{owner}-db`, `{owner}-es-{nodeSet}`. A `{word}` already bound
//! (the owner's name) must appear as it is; any other matches one or more characters and is bound
//! to them, the first word as short as the rest of the name allows.

/// Values of the `{word}`s of a pattern or a path.
pub type Vars = std::collections::BTreeMap<String, String>;

/// The words `name` binds in `pattern` (with `bound`'s already fixed), if it matches.
pub fn matches(pattern: &str, name: &str, bound: &Vars) -> Option<Vars> {
    let parts = parts_of(pattern)?;
    let mut vars = bound.clone();
    matched(&parts, name, &mut vars).then_some(vars)
}

/// A piece of a pattern (or of a path, whose `{word}`s are the same).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part<'a> {
    Literal(&'a str),
    Word(&'a str),
}

/// `pattern`'s pieces, or none if a `{` has no `}`.
pub(crate) fn parts_of(pattern: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let close = rest[open..].find('}')?;
        parts.push(Part::Word(&rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    Some(parts)
}

fn matched(parts: &[Part], name: &str, vars: &mut Vars) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return name.is_empty();
    };
    match first {
        Part::Literal(text) => name
            .strip_prefix(text)
            .is_some_and(|after| matched(rest, after, vars)),
        Part::Word(word) => {
            if let Some(value) = vars.get(*word).cloned() {
                return name
                    .strip_prefix(value.as_str())
                    .is_some_and(|after| matched(rest, after, vars));
            }
            for end in (1..=name.len()).filter(|end| name.is_char_boundary(*end)) {
                vars.insert(word.to_string(), name[..end].to_string());
                if matched(rest, &name[end..], vars) {
                    return true;
                }
            }
            vars.remove(*word);
            false
        }
    }
}
