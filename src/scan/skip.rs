//! Containers nobody looks into (`data` parts, `metadata`, `configuration`, …) still have to
//! be valid JSON, but they need none of the scanner's roles and checks. When one lies whole in
//! the chunk, this validates it in one tight loop with its state in locals. Anything it does not
//! take for certain valid (a fault, a control character, a container deeper than it tracks, the
//! chunk's end) makes it answer `None`: the scanner's state machine then reads the same bytes
//! and reports any fault at its exact byte, so verdicts do not depend on this path.

use crate::scan::scanner::{decode_escape, find_quote_or_backslash};

/// Index just past the container opening at `c[start]` (`{` or `[`), or `None`. `room` is how
/// many levels it may open (the container counts as one).
pub(crate) fn skip_container(c: &[u8], start: usize, room: u32) -> Option<usize> {
    // Bit d of `objects`: the container at depth d+1 is an object.
    let mut objects: u64 = 0;
    let mut depth: u32 = 0;
    let mut i = start;
    loop {
        // A value starts at `i` (after whitespace).
        i = skip_ws(c, i)?;
        match c[i] {
            open @ (b'{' | b'[') => {
                if depth >= room.min(64) {
                    return None;
                }
                let object = open == b'{';
                objects = (objects & !(1 << depth)) | (u64::from(object) << depth);
                depth += 1;
                i = skip_ws(c, i + 1)?;
                let close = if object { b'}' } else { b']' };
                if c[i] == close {
                    depth -= 1;
                    i += 1;
                } else if object {
                    i = key_and_colon(c, i)?;
                    continue;
                } else {
                    continue;
                }
            }
            b'"' => i = skip_string(c, i + 1)?,
            b't' => i = literal(c, i, b"true")?,
            b'f' => i = literal(c, i, b"false")?,
            b'n' => i = literal(c, i, b"null")?,
            b'-' | b'0'..=b'9' => i = skip_number(c, i)?,
            _ => return None,
        }
        // After a value: a comma, or closing brackets.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(c, i)?;
            let object = objects & (1 << (depth - 1)) != 0;
            match c[i] {
                b',' if object => {
                    i = key_and_colon(c, skip_ws(c, i + 1)?)?;
                    break;
                }
                b',' => {
                    i += 1;
                    break;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            depth -= 1;
            i += 1;
        }
    }
}

fn skip_ws(c: &[u8], mut i: usize) -> Option<usize> {
    while matches!(*c.get(i)?, b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    Some(i)
}

/// `"key"` then `:`; returns the index after the colon.
fn key_and_colon(c: &[u8], i: usize) -> Option<usize> {
    if *c.get(i)? != b'"' {
        return None;
    }
    let i = skip_ws(c, skip_string(c, i + 1)?)?;
    (c[i] == b':').then_some(i + 1)
}

fn literal(c: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    c[i..].starts_with(word).then_some(i + word.len())
}

/// A string's contents from `i` (just past its opening quote); returns the index past its
/// closing quote. Escapes must be whole and valid, other bytes valid UTF-8 and not control
/// characters.
fn skip_string(c: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let j = i + find_quote_or_backslash(&c[i..])?;
        let run = &c[i..j];
        // ASCII printable is the rule; anything else is checked in full.
        if run.iter().any(|&b| !(0x20..0x80).contains(&b))
            && (run.iter().any(|&b| b < 0x20) || std::str::from_utf8(run).is_err())
        {
            return None;
        }
        if c[j] == b'"' {
            return Some(j + 1);
        }
        i = decode_escape(c, j + 1)?.1;
    }
}

/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, whole in the chunk (something must
/// follow it, or it may go on in the next chunk).
fn skip_number(c: &[u8], mut i: usize) -> Option<usize> {
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

    fn skip(s: &str) -> Option<usize> {
        skip_container(s.as_bytes(), 0, 128)
    }

    #[test]
    fn takes_whole_valid_containers() {
        for s in [
            "{}",
            "[]",
            r#"{"kind":"form","fields":{"name":"Ada","age":36,"tags":["a","b"],"ok":true}}"#,
            "[1, -2.5e+3, 0, 0.0, 1E9, true, false, null, {}, [], [[{}]]]",
            " { \"a\" : [ 1 , 2 ] , \"b\" : { } } ",
            r#"{"caf\u00e9":"d\u00e9j\u00e0 \ud83d\ude00 \" \\ \/ \n","é":"ü 😀"}"#,
        ] {
            let trimmed = s.trim_start();
            let at = s.len() - trimmed.len();
            let end = skip_container(s.as_bytes(), at, 128);
            assert_eq!(end, Some(s.trim_end().len()), "{s}");
        }
        // It stops at the container's end, whatever follows.
        assert_eq!(skip(r#"{"a":1},"b":2}"#), Some(7));
    }

    #[test]
    fn leaves_everything_doubtful_to_the_state_machine() {
        for s in [
            "{",
            r#"{"a":1"#,
            r#"{"a":1,}"#,
            "[1,]",
            "[01]",
            "[1.]",
            "[1e]",
            "[-]",
            "[tru]",
            "[nul]",
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":"\x"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\u12"}"#,
            "[1}",
            "{\"a\":1]",
        ] {
            assert_eq!(skip(s), None, "{s}");
        }
        // Invalid UTF-8, and a number that may go on in the next chunk.
        assert_eq!(skip_container(b"[\"\xff\"]", 0, 128), None);
        assert_eq!(skip_container(b"[12", 0, 128), None);
    }

    #[test]
    fn stays_within_the_depth_it_is_given() {
        assert_eq!(skip("[[[]]]"), Some(6));
        assert_eq!(skip_container(b"[[[]]]", 0, 3), Some(6));
        assert_eq!(skip_container(b"[[[]]]", 0, 2), None);
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(skip_container(deep.as_bytes(), 0, 1000), None);
    }
}
