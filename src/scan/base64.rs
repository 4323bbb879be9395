//! Streaming base64 validation and sizing: the string is never decoded, only checked in
//! 4-character-aligned pieces with base64-simd's `check`, carrying 0–3 characters between pieces.
//!
//! Rules: one alphabet per string (standard or URL-safe), padding only at the very end, an
//! unpadded final group of 2 or 3 characters is allowed. Decoded size = floor(data chars × 3 / 4).

use base64_simd::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alphabet {
    /// No `+/-_` seen yet: both alphabets agree so far.
    Either,
    Standard,
    UrlSafe,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Base64Run {
    /// Characters seen, padding included.
    chars: u64,
    /// Characters already validated (a multiple of 4 until the end).
    validated: u64,
    /// Non-padding characters validated.
    data_chars: u64,
    carry: [u8; 4],
    carry_len: u8,
    alphabet: Alphabet,
    /// Padding was seen: nothing may follow.
    closed: bool,
}

impl Base64Run {
    pub fn new() -> Self {
        Base64Run {
            chars: 0,
            validated: 0,
            data_chars: 0,
            carry: [0; 4],
            carry_len: 0,
            alphabet: Alphabet::Either,
            closed: false,
        }
    }

    pub fn chars(&self) -> u64 {
        self.chars
    }

    pub fn alphabet(&self) -> Alphabet {
        self.alphabet
    }

    /// Decoded bytes certainly present so far (a lower bound until `finish`).
    pub fn decoded_lower_bound(&self) -> u64 {
        // Carried characters are not validated yet, but each full 4 adds 3 bytes at least as
        // long as they turn out valid; keep to validated ones so the bound is never wrong.
        self.data_chars / 4 * 3 + (self.data_chars % 4).saturating_sub(1)
    }

    /// Feed raw characters of the string. `Err` = not base64 (the position is `chars()` then).
    pub fn push(&mut self, mut s: &[u8]) -> Result<(), ()> {
        if s.is_empty() {
            return Ok(());
        }
        if self.closed {
            return Err(());
        }
        self.chars += s.len() as u64;
        if self.carry_len > 0 {
            let need = (4 - self.carry_len as usize).min(s.len());
            self.carry[self.carry_len as usize..self.carry_len as usize + need]
                .copy_from_slice(&s[..need]);
            self.carry_len += need as u8;
            s = &s[need..];
            if self.carry_len < 4 {
                return Ok(());
            }
            let quad = self.carry;
            self.carry_len = 0;
            self.check_piece(&quad)?;
        }
        let aligned = s.len() / 4 * 4;
        if aligned > 0 {
            if self.closed {
                return Err(());
            }
            self.check_piece(&s[..aligned])?;
        }
        let tail = &s[aligned..];
        if !tail.is_empty() && self.closed {
            return Err(());
        }
        self.carry[..tail.len()].copy_from_slice(tail);
        self.carry_len = tail.len() as u8;
        Ok(())
    }

    /// Like `push`, but all or nothing: a piece that is not entirely valid (it may hold the
    /// closing quote) leaves the state untouched and returns false.
    pub fn push_clean(&mut self, s: &[u8]) -> bool {
        // Bytes that land in the carry are not checked by `push` until later, so look at them now.
        let head = (4 - self.carry_len as usize) % 4;
        let head = head.min(s.len());
        let tail_start = head + (s.len() - head) / 4 * 4;
        if !s[..head]
            .iter()
            .chain(&s[tail_start..])
            .all(|&b| is_alphabet(b))
        {
            return false;
        }
        let saved = *self;
        if self.push(s).is_ok() {
            true
        } else {
            *self = saved;
            false
        }
    }

    fn check_piece(&mut self, piece: &[u8]) -> Result<(), ()> {
        if self.closed {
            return Err(());
        }
        match self.alphabet {
            Alphabet::Standard => STANDARD.check(piece).map_err(|_| ())?,
            Alphabet::UrlSafe => URL_SAFE.check(piece).map_err(|_| ())?,
            Alphabet::Either => {
                if STANDARD.check(piece).is_ok() {
                    if has_standard_only(piece) {
                        self.alphabet = Alphabet::Standard;
                    }
                } else if URL_SAFE.check(piece).is_ok() {
                    self.alphabet = Alphabet::UrlSafe;
                } else {
                    return Err(());
                }
            }
        }
        let pads = piece.iter().rev().take(2).filter(|&&b| b == b'=').count();
        if pads > 0 {
            self.closed = true;
        }
        self.validated += piece.len() as u64;
        self.data_chars += (piece.len() - pads) as u64;
        Ok(())
    }

    /// End of the string: validate the unpadded final group. Returns the exact decoded size.
    pub fn finish(&mut self) -> Result<u64, ()> {
        let n = self.carry_len as usize;
        if n > 0 {
            if self.closed || n == 1 {
                return Err(());
            }
            let tail = self.carry;
            let tail = &tail[..n];
            let ok = match self.alphabet {
                Alphabet::Standard => STANDARD_NO_PAD.check(tail).is_ok(),
                Alphabet::UrlSafe => URL_SAFE_NO_PAD.check(tail).is_ok(),
                Alphabet::Either => {
                    if STANDARD_NO_PAD.check(tail).is_ok() {
                        true
                    } else if URL_SAFE_NO_PAD.check(tail).is_ok() {
                        self.alphabet = Alphabet::UrlSafe;
                        true
                    } else {
                        false
                    }
                }
            };
            if !ok {
                return Err(());
            }
            self.carry_len = 0;
            self.validated += n as u64;
            self.data_chars += n as u64;
        }
        Ok(self.decoded_lower_bound())
    }
}

/// Whether a valid standard piece holds `+` or `/`. Pieces here are often short (a file's first
/// characters): a branch-free fold beats memchr2's setup there.
fn has_standard_only(piece: &[u8]) -> bool {
    if piece.len() > 256 {
        return memchr::memchr2(b'+', b'/', piece).is_some();
    }
    piece
        .iter()
        .fold(false, |any, &b| any | (b == b'+') | (b == b'/'))
}

fn is_alphabet(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=')
}

/// Decode a small validated piece (a prefix or a window) into `out`; `None` if it does not decode.
pub(crate) fn decode_small<'o>(
    alphabet: Alphabet,
    src: &[u8],
    out: &'o mut [u8],
) -> Option<&'o [u8]> {
    let padded = src.len() % 4 == 0;
    let engine = match (alphabet, padded) {
        (Alphabet::UrlSafe, true) => URL_SAFE,
        (Alphabet::UrlSafe, false) => URL_SAFE_NO_PAD,
        (_, true) => STANDARD,
        (_, false) => STANDARD_NO_PAD,
    };
    let n = engine.decoded_length(src).ok()?;
    if n > out.len() {
        return None;
    }
    let got = engine
        .decode(src, base64_simd::Out::from_slice(&mut out[..n]))
        .ok()?;
    Some(&*got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn run_all(parts: &[&[u8]]) -> Result<u64, ()> {
        let mut r = Base64Run::new();
        for p in parts {
            r.push(p)?;
        }
        r.finish()
    }

    #[test]
    fn sizes_from_length_and_padding() {
        for len in 0..40usize {
            let data: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
            let padded = base64::engine::general_purpose::STANDARD.encode(&data);
            let unpadded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&data);
            for enc in [&padded, &unpadded] {
                for split in 0..=enc.len() {
                    let (a, b) = enc.as_bytes().split_at(split);
                    assert_eq!(run_all(&[a, b]), Ok(len as u64), "{enc} split at {split}");
                }
            }
        }
    }

    #[test]
    fn rejects_bad_alphabet_padding_and_mixing() {
        assert_eq!(run_all(&[b"AAA*"]), Err(()));
        assert_eq!(run_all(&[b"AA==AAAA"]), Err(()));
        assert_eq!(run_all(&[b"AA==", b"AA"]), Err(()));
        assert_eq!(run_all(&[b"AAAAA"]), Err(()));
        assert_eq!(run_all(&[b"AB="]), Err(()));
        assert_eq!(run_all(&[b"+A", b"A-"]), Err(()));
        assert_eq!(run_all(&[b"++++", b"----"]), Err(()));
        assert_eq!(run_all(&[b"AA\nA"]), Err(()));
        assert_eq!(run_all(&[b"--__"]), Ok(3));
        assert_eq!(run_all(&[b""]), Ok(0));
    }

    #[test]
    fn lower_bound_never_exceeds_the_final_size() {
        let enc = base64::engine::general_purpose::STANDARD.encode([7u8; 100]);
        let mut r = Base64Run::new();
        for b in enc.as_bytes() {
            r.push(std::slice::from_ref(b)).unwrap();
            assert!(r.decoded_lower_bound() <= 100);
        }
        assert_eq!(r.finish(), Ok(100));
    }

    #[test]
    fn decodes_small_pieces() {
        let mut out = [0u8; 8];
        assert_eq!(
            decode_small(Alphabet::Either, b"aGk", &mut out),
            Some(&b"hi"[..])
        );
        assert_eq!(
            decode_small(Alphabet::Either, b"aGk=", &mut out),
            Some(&b"hi"[..])
        );
        assert_eq!(
            decode_small(Alphabet::UrlSafe, b"_-8", &mut out),
            Some(&[0xff, 0xef][..])
        );
    }
}
