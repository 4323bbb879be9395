//! Token counting for `text.maxTokens`, with the OpenAI encodings bpe-openai ships offline.

/// A tokenizer the gateway can count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    Cl100kBase,
    O200kBase,
}

impl Tokenizer {
    /// The names used in `text.tokenizer` (tiktoken's encoding names).
    pub fn by_name(name: &str) -> Option<Tokenizer> {
        match name.trim().to_ascii_lowercase().as_str() {
            "cl100k_base" | "cl100k" => Some(Tokenizer::Cl100kBase),
            "o200k_base" | "o200k" => Some(Tokenizer::O200kBase),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::Cl100kBase => "cl100k_base",
            Tokenizer::O200kBase => "o200k_base",
        }
    }

    fn inner(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Tokenizer::Cl100kBase => bpe_openai::cl100k_base(),
            Tokenizer::O200kBase => bpe_openai::o200k_base(),
        }
    }

    /// Exact token count.
    pub fn count(self, text: &str) -> u64 {
        self.inner().count(text) as u64
    }

    /// `Some(count)` when `count <= limit`, else `None`; stops as soon as the limit is passed.
    pub fn count_within(self, text: &str, limit: u64) -> Option<u64> {
        // Every token is at least one byte, so a short text cannot pass the limit.
        if text.len() as u64 <= limit {
            return Some(self.count(text));
        }
        let tok = self.inner();
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        tok.count_till_limit(&tok.normalize(text), limit)
            .map(|n| n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_encodings() {
        let t = Tokenizer::by_name("cl100k_base").unwrap();
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count_within("hello world", 2), Some(2));
        assert_eq!(t.count_within("hello world", 1), None);
        let o = Tokenizer::by_name(" O200K_BASE ").unwrap();
        assert_eq!(o.name(), "o200k_base");
        assert!(o.count("hello world, this is a test") >= 5);
        assert_eq!(Tokenizer::by_name("p50k_base"), None);
    }
}
