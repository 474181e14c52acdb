//! Paths into an owner's resource: JSON pointers (RFC 6901: `/spec/storage/…`, `~1` for a `/` in
//! a key), where a segment `[field=value]` picks the element of an array whose `field` (dotted for a
//! nested one: `metadata.name`) equals `value`, and `{word}` stands for a value bound from the
//! names of the StatefulSet and its template. What Ferry writes through a path is a JSON Patch
//! (RFC 6902) of concrete pointers, so a pick is resolved against the resource as it was read.

use crate::owners::pattern::{self, Part};
use serde_json::{Value, json};

pub use crate::owners::pattern::Vars;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Pick { field: Vec<String>, value: String },
}

/// A path with its words bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    text: String,
    segments: Vec<Segment>,
}

/// Where a path leads in a resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Found<'a> {
    /// A value, at this concrete pointer.
    Value { pointer: String, value: &'a Value },
    /// Nothing yet, but a write can make it: the objects up to `existing` are there, the keys of
    /// `missing` are not.
    Absent { existing: String, missing: Vec<String> },
    /// Nothing, and nothing can be written there: why.
    Unreachable(String),
}

impl Path {
    /// Parses `text` with its words bound from `vars`.
    pub fn parse(text: &str, vars: &Vars) -> Result<Path, String> {
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!("path {text:?} does not start with '/'"));
        };
        // Words are bound within a segment, so a value may hold a '/'.
        let segments = rest
            .split('/')
            .map(|segment| segment_of(segment, vars).map_err(|why| format!("path {text:?}: {why}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Path {
            text: bind(text, vars)?,
            segments,
        })
    }

    /// The path as written, its words bound.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the path leads in `doc`.
    pub fn find<'a>(&self, doc: &'a Value) -> Found<'a> {
        let mut here = doc;
        let mut pointer = String::new();
        for (index, segment) in self.segments.iter().enumerate() {
            let next = match (segment, here) {
                (Segment::Key(key), Value::Object(map)) => match map.get(key) {
                    // A null on the way is no object yet: a write replaces it.
                    Some(Value::Null) if index + 1 < self.segments.len() => {
                        return self.absent(pointer, index);
                    }
                    Some(next) => {
                        pointer.push('/');
                        pointer.push_str(&escape(key));
                        next
                    }
                    None => return self.absent(pointer, index),
                },
                (Segment::Pick { field, value }, Value::Array(items)) => {
                    let picked = items
                        .iter()
                        .position(|item| field_of(item, field).and_then(Value::as_str) == Some(value));
                    match picked {
                        Some(position) => {
                            pointer.push_str(&format!("/{position}"));
                            &items[position]
                        }
                        None => {
                            return Found::Unreachable(format!(
                                "{} names no element with {}={value:?} at {pointer:?}",
                                self.text,
                                field.join(".")
                            ));
                        }
                    }
                }
                _ => {
                    return Found::Unreachable(format!(
                        "{} meets {} at {pointer:?}, not {}",
                        self.text,
                        kind_of(here),
                        match segment {
                            Segment::Key(_) => "an object",
                            Segment::Pick { .. } => "a list",
                        }
                    ));
                }
            };
            here = next;
        }
        Found::Value { pointer, value: here }
    }

    /// Nothing from segment `from` on: writable if the rest are keys.
    fn absent(&self, existing: String, from: usize) -> Found<'static> {
        let mut missing = Vec::new();
        for segment in &self.segments[from..] {
            match segment {
                Segment::Key(key) => missing.push(key.clone()),
                Segment::Pick { field, value } => {
                    return Found::Unreachable(format!(
                        "{} needs a list element with {}={value:?} below {existing:?}, and there is no such list",
                        self.text,
                        field.join(".")
                    ));
                }
            }
        }
        Found::Absent { existing, missing }
    }

    /// The JSON Patch operations that make the path's value `value` in `doc` (none if it is already).
    pub fn write(&self, doc: &Value, value: &Value) -> Result<Vec<Value>, String> {
        match self.find(doc) {
            Found::Value { value: now, .. } if now == value => Ok(Vec::new()),
            Found::Value { pointer, .. } => {
                Ok(vec![json!({"op": "replace", "path": pointer, "value": value})])
            }
            Found::Absent { existing, missing } => {
                let mut ops = Vec::new();
                let mut pointer = existing;
                let last = missing.len().saturating_sub(1);
                for (index, key) in missing.iter().enumerate() {
                    pointer.push('/');
                    pointer.push_str(&escape(key));
                    let made = if index == last { value.clone() } else { json!({}) };
                    ops.push(json!({"op": "add", "path": pointer, "value": made}));
                }
                Ok(ops)
            }
            Found::Unreachable(why) => Err(why),
        }
    }

    /// The JSON Patch operations that remove the path's value from `doc` (none if it has none).
    pub fn remove(&self, doc: &Value) -> Result<Vec<Value>, String> {
        match self.find(doc) {
            Found::Value { pointer, .. } => Ok(vec![json!({"op": "remove", "path": pointer})]),
            Found::Absent { .. } => Ok(Vec::new()),
            Found::Unreachable(why) => Err(why),
        }
    }
}

/// `text` with each `{word}` replaced by its value.
fn bind(text: &str, vars: &Vars) -> Result<String, String> {
    let parts = pattern::parts_of(text).ok_or_else(|| format!("{text:?} has a '{{' without its '}}'"))?;
    parts
        .iter()
        .map(|part| match part {
            Part::Literal(literal) => Ok(*literal),
            Part::Word(word) => vars
                .get(*word)
                .map(String::as_str)
                .ok_or_else(|| format!("{text:?} uses {{{word}}}, which no name binds")),
        })
        .collect()
}

fn segment_of(segment: &str, vars: &Vars) -> Result<Segment, String> {
    if let Some(inner) = segment.strip_prefix('[') {
        let Some((field, value)) = inner.strip_suffix(']').and_then(|inner| inner.split_once('=')) else {
            return Err(format!("segment {segment:?} is not [field=value]"));
        };
        if field.is_empty() {
            return Err(format!("segment {segment:?} names no field"));
        }
        return Ok(Segment::Pick {
            field: field.split('.').map(str::to_string).collect(),
            value: bind(value, vars)?,
        });
    }
    if segment.is_empty() {
        return Err("an empty segment".into());
    }
    Ok(Segment::Key(
        bind(segment, vars)?.replace("~1", "/").replace("~0", "~"),
    ))
}

fn field_of<'a>(item: &'a Value, field: &[String]) -> Option<&'a Value> {
    field.iter().try_fold(item, |here, key| here.get(key))
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
