//! The static embedding model: a text's vector is the sum of its tokens' vectors, so a
//! session's vector grows event by event as its log is read, and a question's is one table
//! lookup per token.

use std::path::Path;

use tokenizers::{Model as _, Tokenizer};

use super::SemanticError;

/// Dimensions of a vector.
pub const DIM: usize = 256;
/// The model's token table in the model directory.
pub(super) const WEIGHTS_FILE: &str = "weights.safetensors";
/// The model's tokenizer in the model directory.
pub(super) const TOKENIZER_FILE: &str = "tokenizer.json";
/// The token table's name inside [`WEIGHTS_FILE`].
const TABLE: &str = "embedding.weight";
/// What the tokenizer's normalizer puts before a word (and in place of a space): SentencePiece's
/// word boundary.
const WORD_START: char = '\u{2581}';

/// A loaded model: its tokenizer and one vector per token.
pub struct Embedder {
    tokenizer: Tokenizer,
    /// `vocab × DIM` values, row by row.
    table: Vec<f32>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("tokens", &(self.table.len() / DIM))
            .finish()
    }
}

impl Embedder {
    /// Reads the model from `dir` ([`WEIGHTS_FILE`] and [`TOKENIZER_FILE`]).
    pub fn load(dir: &Path) -> Result<Self, SemanticError> {
        let bad = |what: &str, why: String| SemanticError::Model(format!("{what}: {why}"));
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| bad(&tokenizer_path.display().to_string(), e.to_string()))?;
        let weights_path = dir.join(WEIGHTS_FILE);
        let weights_name = weights_path.display().to_string();
        let bytes = std::fs::read(&weights_path).map_err(|e| bad(&weights_name, e.to_string()))?;
        let tensors = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(&weights_name, e.to_string()))?;
        let view = tensors
            .tensor(TABLE)
            .map_err(|e| bad(&weights_name, e.to_string()))?;
        let vocab = tokenizer.get_vocab_size(true);
        if view.dtype() != safetensors::Dtype::F16 || view.shape() != [vocab, DIM] {
            return Err(bad(
                &weights_name,
                format!(
                    "{TABLE} is {:?} {:?}, not F16 [{vocab}, {DIM}]",
                    view.dtype(),
                    view.shape()
                ),
            ));
        }
        let table = view
            .data()
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect();
        Ok(Self { tokenizer, table })
    }

    /// Adds the vectors of `text`'s tokens to `sum` (sized to [`DIM`] when it holds any).
    /// Returns how many tokens it added.
    ///
    /// Each word (a run between whitespace) goes to the tokenizer's BPE model as the
    /// normalizer would hand it over after a space: this gives the tokenizer's own tokens, is a
    /// sixth of the cost of encoding (no normalizer, offsets or encoding to build), and lets the
    /// model's word cache serve the words logs repeat.
    pub fn add(&self, text: &str, sum: &mut Vec<f32>) -> usize {
        let vocab = self.table.len() / DIM;
        let model = self.tokenizer.get_model();
        let mut word_text = String::new();
        let mut added = 0;
        for word in text.split_whitespace() {
            word_text.clear();
            word_text.push(WORD_START);
            word_text.push_str(word);
            let Ok(tokens) = model.tokenize(&word_text) else {
                continue;
            };
            for token in tokens {
                let id = token.id as usize;
                if id < vocab {
                    if sum.is_empty() {
                        sum.resize(DIM, 0.0);
                    }
                    let row = &self.table[id * DIM..(id + 1) * DIM];
                    sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
                    added += 1;
                }
            }
        }
        added
    }

    /// The unit vector of `text` (`None` for a text without tokens).
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        let mut sum = Vec::new();
        self.add(text, &mut sum);
        unit(&sum)
    }
}

/// `sum` scaled to length 1 (`None` for an empty or zero vector): a mean of token vectors and
/// their sum point the same way, which is all a cosine sees.
pub fn unit(sum: &[f32]) -> Option<Vec<f32>> {
    let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
    (norm > 0.0 && norm.is_finite()).then(|| sum.iter().map(|v| v / norm).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_unit_vector_has_length_one_and_keeps_its_direction() {
        let v = unit(&[3.0, 4.0]).unwrap();
        assert_eq!(v, [0.6, 0.8]);
        assert_eq!(unit(&[]), None);
        assert_eq!(unit(&[0.0, 0.0]), None);
    }
}
