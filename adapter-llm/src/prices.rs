//! [`ModelPrices`]: what models cost per million tokens, from the table shipped with
//! this crate (`prices.json`, with the date its prices were taken) or a user's file of
//! the same format, and the cost estimate of a usage.
//!
//! A model is priced only under its exact name: an unknown name (a new snapshot, a
//! router's `vendor/model`) gets no price rather than a neighbour's.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use engine_ports::Usage;
use serde::Deserialize;

/// The table shipped with the crate.
const BUILTIN: &str = include_str!("prices.json");

/// The largest prices file read, in bytes.
pub const MAX_PRICES_FILE_BYTES: u64 = 1024 * 1024;

/// One model's prices in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens neither read from nor written to the prompt cache.
    pub input: f64,
    /// Answer tokens.
    pub output: f64,
    /// Prompt tokens read from the prompt cache (default: `input`).
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Prompt tokens written into the prompt cache (default: `input`).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Price {
    /// The cost of `usage` in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cache_read_tokens;
        let written = usage.cache_write_tokens;
        let plain = usage.input_tokens.saturating_sub(cached).saturating_sub(written);
        let dollars = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
        dollars(plain, self.input)
            + dollars(cached, self.cached_input.unwrap_or(self.input))
            + dollars(written, self.cache_write.unwrap_or(self.input))
            + dollars(usage.output_tokens, self.output)
    }

    fn check(&self) -> Result<(), (&'static str, f64)> {
        let fields = [
            ("input", Some(self.input)),
            ("output", Some(self.output)),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
        ];
        for (field, value) in fields {
            if let Some(value) = value
                && !(value.is_finite() && value >= 0.0)
            {
                return Err((field, value));
            }
        }
        Ok(())
    }
}

/// Prices per model name, and the date they were taken.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelPrices {
    taken: Option<String>,
    models: BTreeMap<String, Price>,
}

/// The file format: `{"taken": "YYYY-MM-DD", "models": {"<name>": {"input",
/// "output", "cached_input"?, "cache_write"?}}}` in US dollars per million tokens;
/// `source`, `currency` (only `USD`) and `unit` are notes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesFile {
    #[serde(default)]
    taken: Option<String>,
    #[serde(default, rename = "source")]
    _source: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    currency: Option<String>,
    #[serde(default, rename = "unit")]
    _unit: Option<serde::de::IgnoredAny>,
    models: BTreeMap<String, Price>,
}

impl ModelPrices {
    /// The table shipped with this crate (`prices.json`): the common OpenAI and
    /// Anthropic models.
    pub fn builtin() -> Self {
        match Self::from_json(BUILTIN, "the built-in price table") {
            Ok(prices) => prices,
            Err(error) => {
                // A unit test parses the table: this is unreachable in a build that passed.
                tracing::error!(%error, "the built-in price table does not parse; no cost will be estimated");
                Self::default()
            }
        }
    }

    /// Parses a prices file's text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`PricesError`] naming `origin`, the JSON path at fault and what is expected.
    pub fn from_json(text: &str, origin: impl AsRef<Path>) -> Result<Self, PricesError> {
        let origin = origin.as_ref();
        let fail = |json_path: String, problem: String| PricesError {
            path: origin.to_path_buf(),
            json_path,
            problem,
        };
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let file: PricesFile = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
            let path = error.path().to_string();
            fail(path, error.into_inner().to_string())
        })?;
        if let Some(currency) = &file.currency
            && currency != "USD"
        {
            return Err(fail(
                "currency".to_owned(),
                format!("{currency:?} is not supported: prices are in US dollars (\"USD\")"),
            ));
        }
        for (name, price) in &file.models {
            if name.trim().is_empty() {
                return Err(fail(
                    "models".to_owned(),
                    "a model name is empty: give the exact name sent to the provider".to_owned(),
                ));
            }
            if let Err((field, value)) = price.check() {
                return Err(fail(
                    format!("models.{name}.{field}"),
                    format!("{value} is not a price: expected US dollars per million tokens, a number ≥ 0"),
                ));
            }
        }
        Ok(Self {
            taken: file.taken,
            models: file.models,
        })
    }

    /// Reads a prices file (at most [`MAX_PRICES_FILE_BYTES`]).
    ///
    /// # Errors
    /// [`PricesError`] naming the file, and the JSON path when its content is at fault.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, PricesError> {
        let path = path.as_ref();
        let fail = |problem: String| PricesError {
            path: path.to_path_buf(),
            json_path: String::new(),
            problem,
        };
        let file = std::fs::File::open(path).map_err(|error| fail(format!("cannot read it: {error}")))?;
        let mut bytes = Vec::new();
        file.take(MAX_PRICES_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| fail(format!("cannot read it: {error}")))?;
        if bytes.len() as u64 > MAX_PRICES_FILE_BYTES {
            return Err(fail(format!("it is over {MAX_PRICES_FILE_BYTES} bytes")));
        }
        let text = String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8 text".to_owned()))?;
        Self::from_json(&text, path)
    }

    /// This table with `other`'s models added, replacing this table's prices of the
    /// same names (a user's file over the built-in table).
    #[must_use]
    pub fn overridden_by(mut self, other: Self) -> Self {
        self.models.extend(other.models);
        if other.taken.is_some() {
            self.taken = other.taken;
        }
        self
    }

    /// When the prices were taken (`YYYY-MM-DD`), if the table says.
    pub fn taken(&self) -> Option<&str> {
        self.taken.as_deref()
    }

    /// The prices of `model` (exact name), if known.
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.models.get(model)
    }

    /// The cost in US dollars of `usage` spent on `model`; `None` when its price is
    /// unknown.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.price(model).map(|price| price.cost(usage))
    }

    /// The cost in US dollars of the tokens spent per model; `None` when there are
    /// none, or a model that spent tokens has no known price (a partial sum would
    /// understate the cost).
    pub fn cost_of(&self, usage: &BTreeMap<String, Usage>) -> Option<f64> {
        let mut total = 0.0;
        let mut priced = false;
        for (model, spent) in usage {
            if *spent == Usage::default() {
                continue;
            }
            total += self.cost(model, spent)?;
            priced = true;
        }
        priced.then_some(total)
    }
}

/// A prices file that cannot be used: names the file, the JSON path at fault (empty
/// for the file as a whole) and what is expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PricesError {
    path: PathBuf,
    json_path: String,
    problem: String,
}

impl PricesError {
    /// The file (or label).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The JSON path at fault (`models.gpt-4o.input`), empty for the whole file.
    pub fn json_path(&self) -> &str {
        &self.json_path
    }
}

impl fmt::Display for PricesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "prices file {}", self.path.display())?;
        if !self.json_path.is_empty() && self.json_path != "." {
            write!(f, " at {}", self.json_path)?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for PricesError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_parses_and_is_dated() {
        let prices = ModelPrices::from_json(BUILTIN, "prices.json").unwrap();
        assert!(prices.taken().is_some_and(|taken| taken.len() == 10));
        for model in [
            "gpt-5",
            "gpt-4.1",
            "gpt-4o-mini",
            "claude-sonnet-4-6",
            "claude-haiku-4-5",
        ] {
            assert!(prices.price(model).is_some(), "{model}");
        }
        assert_eq!(ModelPrices::builtin(), prices);
    }

    #[test]
    fn a_cost_prices_plain_cached_written_and_output_tokens_apart() {
        let price = Price {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: Some(3.75),
        };
        // 1M prompt tokens: 600k read from the cache, 100k written, 300k plain.
        let usage = Usage::new(1_000_000, 100_000).with_cache(600_000, 100_000);
        let cost = price.cost(&usage);
        let expected = 0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75 + 0.1 * 15.0;
        assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    }

    #[test]
    fn unknown_models_get_no_price_and_spoil_a_sum() {
        let prices = ModelPrices::builtin();
        assert_eq!(prices.cost("gpt-5-2099-01-01", &Usage::new(10, 10)), None);
        assert_eq!(prices.cost("openai/gpt-5", &Usage::new(10, 10)), None);
        let mut spent = BTreeMap::new();
        spent.insert("gpt-4o".to_owned(), Usage::new(1_000_000, 0));
        assert_eq!(prices.cost_of(&spent), Some(2.5));
        spent.insert("my-local-model".to_owned(), Usage::default());
        assert_eq!(
            prices.cost_of(&spent),
            Some(2.5),
            "a model that spent nothing costs nothing"
        );
        spent.insert("my-local-model".to_owned(), Usage::new(1, 0));
        assert_eq!(prices.cost_of(&spent), None);
        assert_eq!(prices.cost_of(&BTreeMap::new()), None);
    }

    #[test]
    fn a_bad_file_names_the_file_and_the_json_path() {
        let error = ModelPrices::from_json(r#"{"models": {"m": {"input": "cheap", "output": 1}}}"#, "p.json")
            .unwrap_err();
        assert_eq!(error.json_path(), "models.m.input");
        assert!(
            error
                .to_string()
                .starts_with("prices file p.json at models.m.input: "),
            "{error}"
        );
        let error =
            ModelPrices::from_json(r#"{"models": {"m": {"input": -1, "output": 1}}}"#, "p.json").unwrap_err();
        assert_eq!(
            error.to_string(),
            "prices file p.json at models.m.input: -1 is not a price: expected US dollars per million tokens, a number ≥ 0"
        );
        let error =
            ModelPrices::from_json(r#"{"models": {"m": {"input": 1, "outptu": 1}}}"#, "p.json").unwrap_err();
        assert!(error.to_string().contains("models.m"), "{error}");
        assert!(error.to_string().contains("outptu"), "{error}");
        let error = ModelPrices::from_json(r#"{"currency": "EUR", "models": {}}"#, "p.json").unwrap_err();
        assert_eq!(error.json_path(), "currency");
    }

    #[test]
    fn a_users_table_overrides_and_extends_the_builtin_one() {
        let mine = ModelPrices::from_json(
            r#"{"taken": "2030-01-01", "models": {"gpt-4o": {"input": 1, "output": 2}, "local": {"input": 0, "output": 0}}}"#,
            "mine.json",
        )
        .unwrap();
        let prices = ModelPrices::builtin().overridden_by(mine);
        assert_eq!(
            prices.cost("gpt-4o", &Usage::new(1_000_000, 1_000_000)),
            Some(3.0)
        );
        assert_eq!(prices.cost("local", &Usage::new(5, 5)), Some(0.0));
        assert!(prices.price("gpt-5").is_some());
        assert_eq!(prices.taken(), Some("2030-01-01"));
    }
}
