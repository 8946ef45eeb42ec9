//! [`Tiktoken`]: OpenAI's byte-pair encodings, through `tiktoken-rs`.
//!
//! `tiktoken-rs` was chosen because it is the maintained Rust port of OpenAI's own `tiktoken`
//! (its core is vendored from it and kept in step with its model table), embeds the published
//! vocabularies (no download at run time, so counting works offline), builds on adk's MSRV
//! (it declares 1.85) and counts without allocating the token list (`count_ordinary`).
//! Hugging Face's `tokenizers` reads the same files but needs them on disk and brings a far
//! larger build.

use std::fmt;

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer as Vocabulary, get_tokenizer};

use super::Tokenizer;

/// An OpenAI encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and the o-series.
    O200kBase,
    /// GPT-4, GPT-3.5 and the `text-embedding-3` models.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name, as `tiktoken` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }
}

/// No OpenAI encoding is known for this model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no OpenAI encoding is known for the model `{model}`; count it with `Heuristic`")]
pub struct TiktokenError {
    /// The model asked for.
    pub model: String,
}

/// Counts tokens with a real OpenAI encoding; the vocabulary is parsed once per process, on
/// first use, and shared.
///
/// ```
/// use adk::tokens::{Encoding, Tiktoken, Tokenizer};
///
/// let gpt4o = Tiktoken::for_model("gpt-4o")?;
/// assert_eq!(gpt4o.encoding(), Encoding::O200kBase);
/// assert_eq!(gpt4o.count("Hello, world!"), 4);
/// assert!(Tiktoken::for_model("claude-sonnet-4").is_err());
/// # Ok::<(), adk::tokens::TiktokenError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Tiktoken {
    encoding: Encoding,
    bpe: &'static CoreBPE,
}

impl fmt::Debug for Tiktoken {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Tiktoken")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl Tiktoken {
    /// The tokenizer of an encoding.
    pub fn new(encoding: Encoding) -> Self {
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        Self { encoding, bpe }
    }

    /// The tokenizer of an OpenAI chat model, by name: `gpt-4o`, `gpt-4.1-mini`, `o3`,
    /// `gpt-3.5-turbo`, a fine-tune (`ft:gpt-4o:…`), or any of them behind a provider prefix
    /// (`openai/gpt-4o`, `azure/gpt-4o`).
    ///
    /// # Errors
    ///
    /// [`TiktokenError`] for a model that is not an OpenAI chat model.
    pub fn for_model(model: &str) -> Result<Self, TiktokenError> {
        let name = model.rsplit('/').next().unwrap_or(model);
        match get_tokenizer(name) {
            Some(Vocabulary::O200kBase) => Ok(Self::new(Encoding::O200kBase)),
            Some(Vocabulary::Cl100kBase) => Ok(Self::new(Encoding::Cl100kBase)),
            _ => Err(TiktokenError {
                model: model.to_owned(),
            }),
        }
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl Tokenizer for Tiktoken {
    fn count(&self, text: &str) -> usize {
        self.bpe.count_ordinary(text)
    }

    fn name(&self) -> &str {
        self.encoding.name()
    }
}
