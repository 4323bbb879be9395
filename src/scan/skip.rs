//! Containers nobody looks into (`data` parts, `metadata`, `configuration`, …) still have to
//! be valid JSON, but they need none of the scanner's roles and checks. This validates them in
//! one tight loop with its state in locals. It stops at the first thing it cannot take for
//! certain valid (a fault, a split escape, a container deeper than it tracks, the chunk's end)
//! and hands over where the last token ended: the scanner's state machine takes the rest from
//! there, as if it had read everything before itself. Faults are therefore always found, and
//! reported, by the state machine, at the same byte whatever the chunking.

use crate::scan::scanner::{decode_escape, find_quote_or_backslash, first_special};

/// What comes next at a token boundary; the state machine's lexical state of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    ObjectFirst,
    ArrayFirst,
    Value,
    Key,
    After,
}

/// Where the loop stopped inside the container: the containers opened and not yet closed
/// (bit d of `objects` set: the one at depth d+1 is an object), and what comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stop {
    pub at: usize,
    pub depth: u32,
    pub objects: u64,
    pub expect: Expect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skipped {
    /// The whole container: the index just past it.
    Whole(usize),
    /// Part of it, up to a token boundary.
    Partial(Stop),
}

/// Validate the container opening at `c[start]` (`{` or `[`); `None` when not even its first
/// token could be taken. `room` is how many levels it may open (the container counts as one).
pub(crate) fn skip_container(c: &[u8], start: usize, room: u32) -> Option<Skipped> {
    let room = room.min(64);
    let mut objects: u64 = 0;
    let mut depth: u32 = 0;
    let mut expect = Expect::Value;
    let mut i = start;
    loop {
        // A token boundary: hand over here if what follows cannot be taken.
        let stop = Stop {
            at: i,
            depth,
            objects,
            expect,
        };
        let give_up = move || (stop.depth > 0).then_some(Skipped::Partial(stop));
        let Some(at) = skip_ws(c, i) else {
            return give_up();
        };
        let b = c[at];
        let close = match (expect, b) {
            (Expect::ArrayFirst, b']') => true,
            (Expect::ObjectFirst, b'}') => true,
            (Expect::After, b'}' | b']') => {
                let object = objects & (1 << (depth - 1)) != 0;
                if object != (b == b'}') {
                    return give_up();
                }
                true
            }
            _ => false,
        };
        if close {
            depth -= 1;
            i = at + 1;
            expect = Expect::After;
            if depth == 0 {
                return Some(Skipped::Whole(i));
            }
            continue;
        }
        // `expect` may move on before the token is known good: a failure gives up at `stop`.
        let next = match expect {
            Expect::Value | Expect::ArrayFirst => match b {
                b'{' | b'[' => {
                    if depth >= room {
                        return give_up();
                    }
                    let object = b == b'{';
                    objects = (objects & !(1 << depth)) | (u64::from(object) << depth);
                    depth += 1;
                    expect = if object {
                        Expect::ObjectFirst
                    } else {
                        Expect::ArrayFirst
                    };
                    Some(at + 1)
                }
                _ => {
                    expect = Expect::After;
                    match b {
                        b'"' => skip_string(c, at + 1),
                        b't' => literal(c, at, b"true"),
                        b'f' => literal(c, at, b"false"),
                        b'n' => literal(c, at, b"null"),
                        b'-' | b'0'..=b'9' => skip_number(c, at),
                        _ => None,
                    }
                }
            },
            Expect::ObjectFirst | Expect::Key => {
                expect = Expect::Value;
                key_and_colon(c, at)
            }
            Expect::After if b == b',' => {
                let object = objects & (1 << (depth - 1)) != 0;
                expect = if object { Expect::Key } else { Expect::Value };
                Some(at + 1)
            }
            Expect::After => None,
        };
        match next {
            Some(n) => i = n,
            None => return give_up(),
        }
    }
}

pub(crate) fn skip_ws(c: &[u8], mut i: usize) -> Option<usize> {
    while matches!(*c.get(i)?, b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    Some(i)
}

/// `"key"` then `:`; returns the index after the colon.
fn key_and_colon(c: &[u8], i: usize) -> Option<usize> {
    if c[i] != b'"' {
        return None;
    }
    let i = skip_ws(c, skip_string(c, i + 1)?)?;
    (c[i] == b':').then_some(i + 1)
}

pub(crate) fn literal(c: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    c[i..].starts_with(word).then_some(i + word.len())
}

/// A string's contents from `i` (just past its opening quote); returns the index past its
/// closing quote. Escapes must be whole and valid, other bytes valid UTF-8 and not control
/// characters.
pub(crate) fn skip_string(c: &[u8], mut i: usize) -> Option<usize> {
    loop {
        // Most runs are short printable ASCII: one word-at-a-time look finds where they end.
        let window = &c[i..c.len().min(i + 64)];
        let j = match first_special(window) {
            Some(n) if matches!(window[n], b'"' | b'\\') => i + n,
            _ => {
                // Long, non-ASCII or a control character: find the end, then check it all.
                let j = i + find_quote_or_backslash(&c[i..])?;
                let run = &c[i..j];
                if run.iter().any(|&b| b < 0x20) || std::str::from_utf8(run).is_err() {
                    return None;
                }
                j
            }
        };
        if c[j] == b'"' {
            return Some(j + 1);
        }
        i = decode_escape(c, j + 1)?.1;
    }
}

/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, whole in the chunk (something must
/// follow it, or it may go on in the next chunk).
pub(crate) fn skip_number(c: &[u8], mut i: usize) -> Option<usize> {
    let digits = |i: usize| c[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if c[i] == b'-' {
        i += 1;
    }
    match *c.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i += digits(i),
        _ => return None,
    }
    if c.get(i) == Some(&b'.') {
        let n = digits(i + 1);
        if n == 0 {
            return None;
        }
        i += 1 + n;
    }
    if matches!(c.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(c.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(i);
        if n == 0 {
            return None;
        }
        i += n;
    }
    (i < c.len()).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(s: &str) -> Option<Skipped> {
        skip_container(s.as_bytes(), 0, 128)
    }

    fn stop(at: usize, depth: u32, objects: u64, expect: Expect) -> Option<Skipped> {
        Some(Skipped::Partial(Stop {
            at,
            depth,
            objects,
            expect,
        }))
    }

    #[test]
    fn takes_whole_valid_containers() {
        for s in [
            "{}",
            "[]",
            r#"{"kind":"form","fields":{"name":"Ada","age":36,"tags":["a","b"],"ok":true}}"#,
            "[1, -2.5e+3, 0, 0.0, 1E9, true, false, null, {}, [], [[{}]]]",
            "{ \"a\" : [ 1 , 2 ] , \"b\" : { } }",
            r#"{"caf\u00e9":"d\u00e9j\u00e0 \ud83d\ude00 \" \\ \/ \n","é":"ü 😀"}"#,
        ] {
            assert_eq!(skip(s), Some(Skipped::Whole(s.len())), "{s}");
        }
        // It stops at the container's end, whatever follows.
        assert_eq!(skip(r#"{"a":1},"b":2}"#), Some(Skipped::Whole(7)));
    }

    #[test]
    fn hands_over_at_the_last_token_boundary() {
        // Faults: the state machine reads on from the token before them and reports them.
        assert_eq!(skip(r#"{"a":1,}"#), stop(7, 1, 1, Expect::Key));
        assert_eq!(skip("[1,]"), stop(3, 1, 0, Expect::Value));
        assert_eq!(skip("[01]"), stop(2, 1, 0, Expect::After));
        assert_eq!(skip("[1.]"), stop(1, 1, 0, Expect::ArrayFirst));
        assert_eq!(skip("[tru]"), stop(1, 1, 0, Expect::ArrayFirst));
        assert_eq!(skip(r#"{"a" 1}"#), stop(1, 1, 1, Expect::ObjectFirst));
        assert_eq!(skip("[1}"), stop(2, 1, 0, Expect::After));
        assert_eq!(skip(r#"[{"a":"\x"}]"#), stop(6, 2, 0b10, Expect::Value));
        assert_eq!(skip("[\"tab\there\"]"), stop(1, 1, 0, Expect::ArrayFirst));
        assert_eq!(
            skip_container(b"[\"\xff\"]", 0, 128),
            stop(1, 1, 0, Expect::ArrayFirst)
        );
        // The chunk's end, inside a string, a number (it may go on) or between tokens.
        assert_eq!(skip(r#"{"a":[1,"b"#), stop(8, 2, 0b01, Expect::Value));
        assert_eq!(skip("[1,23"), stop(3, 1, 0, Expect::Value));
        assert_eq!(skip("[[], "), stop(4, 1, 0, Expect::Value));
        assert_eq!(skip("{"), stop(1, 1, 1, Expect::ObjectFirst));
        assert_eq!(skip("{x"), stop(1, 1, 1, Expect::ObjectFirst));
        // Nothing taken at all.
        assert_eq!(skip_container(b"[]", 0, 0), None);
    }

    #[test]
    fn stays_within_the_depth_it_is_given() {
        assert_eq!(skip("[[[]]]"), Some(Skipped::Whole(6)));
        assert_eq!(skip_container(b"[[[]]]", 0, 3), Some(Skipped::Whole(6)));
        assert_eq!(
            skip_container(b"[[[]]]", 0, 2),
            stop(2, 2, 0, Expect::ArrayFirst)
        );
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(
            skip_container(deep.as_bytes(), 0, 1000),
            stop(64, 64, 0, Expect::ArrayFirst)
        );
    }
}
