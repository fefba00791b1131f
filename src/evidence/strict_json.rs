//! Strict JSON for every file fdwindow reads and may rewrite or merge from
//! (results, costs, pressure, timing, audit benchmark and audit shard files,
//! and the reports the runner reads from the probes).
//!
//! serde_json keeps the last of a key given twice in one object and drops
//! the others without a word, and drops a field no struct names; a rewrite
//! of the file (`fdwindow run`, `merge`, a bench) then loses them for good.
//! So a document is accepted only when:
//!
//! 1. no object repeats a key ([`parse`] names the key, the object's JSON
//!    pointer, RFC 6901, and the line);
//! 2. no field is unknown: every struct written back is
//!    `#[serde(deny_unknown_fields)]`, so an unknown field is refused
//!    whatever it holds (a round trip alone cannot tell an unknown field
//!    holding `0` or `null` from a known one the writer skips at its
//!    default);
//! 3. writing back what was parsed keeps everything it said ([`kept`]): a
//!    value the types would change is refused with its pointer, and so is a
//!    field an untyped `Value` would lose.
//!
//! # References
//! - <https://www.rfc-editor.org/rfc/rfc8259#section-4> ("The names within
//!   an object SHOULD be unique"; behaviour on duplicates is unpredictable)
//! - <https://www.rfc-editor.org/rfc/rfc6901> (JSON Pointer)

use crate::error::{Error, Result, usage};
use std::fmt;

use serde::Serialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `text` as one JSON document, refusing any object that repeats a
/// key. Errors read `not JSON: …` or `duplicate key "k" in /p at line L
/// column C`.
pub fn parse(text: &str) -> Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    Strict { at: &Step::Root }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| match e.classify() {
            // Only this module's own refusal is a data error here: a
            // `Value` takes any well-formed JSON.
            serde_json::error::Category::Data => Error::usage(e),
            _ => usage!("not JSON: {e}"),
        })
}

/// Parses `text` strictly ([`parse`]) into `T` ([`typed`]).
pub fn from_str<T>(text: &str, bad: &str) -> Result<T>
where
    T: serde::de::DeserializeOwned + Serialize,
{
    typed(&parse(text)?, bad)
}

/// `doc` (from [`parse`]) as a `T`, when nothing in it would be lost by
/// writing the `T` back ([`kept`]). `bad` is put before a type error (`bad
/// costs: missing field …`). A reader that checks a document's schema first
/// parses, checks, then calls this.
pub fn typed<T>(doc: &Value, bad: &str) -> Result<T>
where
    T: serde::de::DeserializeOwned + Serialize,
{
    let parsed: T = serde_json::from_value(doc.clone()).map_err(|e| usage!("{bad}: {e}"))?;
    kept(doc, &parsed)?;
    Ok(parsed)
}

/// Checks that serialising `parsed` (what `read` was parsed into) keeps every
/// value of `read`: each field is still there with the same value (numbers
/// compared as numbers, so `1` read into an `f64` and written as `1.0`
/// passes). A field left out of the written form passes only when it holds
/// its type's default (`null`, `false`, `0`, `[]`, `{}`): a writer skips
/// such a field (`skip_serializing_if`) and reading it back gives the same.
pub fn kept<T: Serialize>(read: &Value, parsed: &T) -> Result<()> {
    let written = serde_json::to_value(parsed).map_err(|e| usage!("cannot write back: {e}"))?;
    contained(read, &written, &Step::Root)
}

fn contained(read: &Value, written: &Value, at: &Step<'_>) -> Result<()> {
    match (read, written) {
        (Value::Object(r), Value::Object(w)) => {
            for (key, value) in r {
                let here = Step::Key(at, key);
                match w.get(key) {
                    Some(w) => contained(value, w, &here)?,
                    None if is_default(value) => {}
                    None => {
                        return Err(usage!(
                            "{here}: unknown field: this fdwindow would drop it on a rewrite"
                        ));
                    }
                }
            }
            Ok(())
        }
        (Value::Array(r), Value::Array(w)) if r.len() == w.len() => {
            for (i, (r, w)) in r.iter().zip(w).enumerate() {
                contained(r, w, &Step::Index(at, i))?;
            }
            Ok(())
        }
        (Value::Number(r), Value::Number(w)) if same_number(r, w) => Ok(()),
        (r, w) if r == w => Ok(()),
        (r, w) => Err(usage!(
            "{at}: {} would be written back as {}",
            brief(r),
            brief(w)
        )),
    }
}

fn same_number(a: &Number, b: &Number) -> bool {
    a == b || ((a.is_f64() || b.is_f64()) && a.as_f64() == b.as_f64())
}

fn is_default(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(true) | Value::String(_) => false,
    }
}

/// A value in a message: itself when short, else what it is.
fn brief(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(o) => format!("an object of {} fields", o.len()),
        _ => {
            let s = v.to_string();
            if s.chars().count() <= 60 {
                s
            } else {
                format!("{}…", s.chars().take(60).collect::<String>())
            }
        }
    }
}

/// Where a value sits in the document, built only when a message needs it.
enum Step<'a> {
    Root,
    Key(&'a Step<'a>, &'a str),
    Index(&'a Step<'a>, usize),
}

impl fmt::Display for Step<'_> {
    /// The JSON pointer: `/probes/etxtbsy/arms/0`; the root is the empty
    /// pointer, written `/` here so a message never shows nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn walk(s: &Step<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match s {
                Step::Root => Ok(()),
                Step::Key(up, key) => {
                    walk(up, f)?;
                    write!(f, "/{}", key.replace('~', "~0").replace('/', "~1"))
                }
                Step::Index(up, i) => {
                    walk(up, f)?;
                    write!(f, "/{i}")
                }
            }
        }
        match self {
            Step::Root => f.write_str("/"),
            _ => walk(self, f),
        }
    }
}

/// Builds a [`Value`] like serde_json's own, refusing a repeated key.
struct Strict<'a> {
    at: &'a Step<'a>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON has no NaN or infinity, so from_f64 always succeeds here.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict {
            at: &Step::Index(self.at, out.len()),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let object = match self.at {
                    Step::Root => "the top-level object".to_owned(),
                    at => at.to_string(),
                };
                return Err(de::Error::custom(format!(
                    "duplicate key {key:?} in {object}"
                )));
            }
            let value = map.next_value_seed(Strict {
                at: &Step::Key(self.at, &key),
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_named_with_its_object() {
        let e = parse(r#"{"probes": {}, "schema": 1, "probes": {}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(r#"duplicate key "probes" in the top-level object at line 1"#),
            "{e}"
        );
        let e = parse(r#"{"probes": {"a/b": [{"x": 1, "x": 1}]}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(r#"duplicate key "x" in /probes/a~1b/0 "#),
            "{e}"
        );
        // The same key in sibling objects is no repeat.
        let v = parse(r#"[{"x": 1}, {"x": 2.5, "y": null, "z": [true, "s", -3]}]"#).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"x": 1}, {"x": 2.5, "y": null, "z": [true, "s", -3]}])
        );
        assert!(
            parse("{")
                .unwrap_err()
                .to_string()
                .starts_with("not JSON: ")
        );
        assert!(
            parse("{} {}")
                .unwrap_err()
                .to_string()
                .starts_with("not JSON: ")
        );
    }

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Doc {
        n: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        list: Vec<u32>,
    }

    #[test]
    fn only_a_document_that_survives_its_rewrite_is_read() {
        // Integers into floats, and skipped defaults, lose nothing.
        let doc: Doc = from_str(r#"{"n": 1, "note": null, "list": []}"#, "bad").unwrap();
        assert_eq!(doc.n, 1.0);
        // An unknown field, even nested, would be dropped.
        let e = from_str::<Doc>(r#"{"n": 1, "extra": "kept?"}"#, "bad")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/extra: unknown field: this fdwindow would drop it on a rewrite"
        );
        let e = from_str::<Vec<Doc>>(r#"[{"n": 1}, {"n": 2, "x": [1]}]"#, "bad")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/1/x: unknown field"), "{e}");
        let e = from_str::<Doc>(r#"{"n": "1"}"#, "bad doc")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad doc: invalid type"), "{e}");
        // A value the types would change is refused too.
        let read = serde_json::json!({"n": 1.5});
        let e = kept(&read, &serde_json::json!({"n": 2}))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "/n: 1.5 would be written back as 2");
        let e = kept(&serde_json::json!([1, 2]), &serde_json::json!([1]))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "/: an array of 2 would be written back as an array of 1");
    }
}
