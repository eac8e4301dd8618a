//! Human ratings beside the automatic outcome, as every kind's outputs show them: the columns
//! `human_verdict`, `human_score`, `human_comment` and `rater` (the current rating of each row,
//! empty where no one rated it), and the `answer` column of the exports. It reads nothing: the
//! ratings come from `Store::current_ratings`.

use std::collections::HashMap;

use polars::prelude::Column;

use crate::store::Rating;

pub use crate::store::rating_columns::{ANSWER, HUMAN_COMMENT, HUMAN_SCORE, HUMAN_VERDICT, RATER};

/// The four human columns of rows whose uids are `uids`, each the current rating in
/// `ratings` (empty where there is none).
pub(crate) fn human_columns<'a>(
    uids: impl IntoIterator<Item = Option<&'a str>>,
    ratings: &HashMap<String, Rating>,
) -> Vec<Column> {
    let (mut verdict, mut score, mut comment, mut rater) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for uid in uids {
        let r = uid.and_then(|uid| ratings.get(uid));
        verdict.push(r.and_then(|r| r.verdict.map(|v| v.as_str())));
        score.push(r.and_then(|r| r.score.map(u32::from)));
        comment.push(r.and_then(|r| r.comment.clone()));
        rater.push(r.map(|r| r.rater.clone()));
    }
    vec![
        Column::new(HUMAN_VERDICT.into(), verdict),
        Column::new(HUMAN_SCORE.into(), score),
        Column::new(HUMAN_COMMENT.into(), comment),
        Column::new(RATER.into(), rater),
    ]
}

/// The four human fields of one row as CSV text (empty where there is no rating), for the
/// exports written with the `csv` crate.
pub(crate) fn human_fields(rating: Option<&Rating>) -> [String; 4] {
    match rating {
        None => Default::default(),
        Some(r) => [
            r.verdict.map(|v| v.as_str().to_owned()).unwrap_or_default(),
            r.score.map(|s| s.to_string()).unwrap_or_default(),
            r.comment.clone().unwrap_or_default(),
            r.rater.clone(),
        ],
    }
}

/// The names of the four human columns, in their order.
pub const HUMAN_COLUMNS: [&str; 4] = [HUMAN_VERDICT, HUMAN_SCORE, HUMAN_COMMENT, RATER];
