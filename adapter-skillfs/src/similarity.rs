//! Near-duplicate detection: Jaccard similarity of character-bigram sets over
//! normalised descriptions.

use std::collections::HashSet;

/// The similarity at or above which a draft is near an active skill.
pub const NEAR_DUPLICATE_THRESHOLD: f64 = 0.5;

/// Lowercased, whitespace runs collapsed to one space, trimmed.
pub(crate) fn normalise(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The set of adjacent character pairs of `text`.
pub(crate) fn bigrams(text: &str) -> HashSet<(char, char)> {
    let chars: Vec<char> = text.chars().collect();
    chars.windows(2).map(|w| (w[0], w[1])).collect()
}

/// |A ∩ B| / |A ∪ B| (0 when both are empty).
pub(crate) fn jaccard(a: &HashSet<(char, char)>, b: &HashSet<(char, char)>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_descriptions_score_high_and_unrelated_low() {
        let active = bigrams(&normalise(
            "How to deploy this service to the staging environment.",
        ));
        let draft = bigrams(&normalise(
            "How to  deploy the service to the STAGING environment",
        ));
        let other = bigrams(&normalise("Format JSON files with jq."));
        assert!(jaccard(&active, &draft) >= NEAR_DUPLICATE_THRESHOLD);
        assert!(jaccard(&other, &draft) < NEAR_DUPLICATE_THRESHOLD);
        assert!((jaccard(&draft, &draft) - 1.0).abs() < f64::EPSILON);
        assert!(jaccard(&HashSet::new(), &HashSet::new()).abs() < f64::EPSILON);
    }
}
