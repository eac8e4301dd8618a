//! Review frames and summaries with polars, from the store's columns: Likert averages per
//! reviewer, generator, sensor and criterion, N/A and parse-failure counts, and agreement
//! between reviewers. Nothing here reads SQL or prints.

use std::collections::BTreeMap;

use polars::prelude::*;

use super::columns as cols;
use crate::analysis::stats::{Level, krippendorff_alpha, mean_interval, weighted_kappa};
use crate::store::{ParseStatus, ReviewColumns, ScoreColumns};

/// Reviews (one row each) and their criterion scores (one row per review and criterion).
#[derive(Debug, Clone)]
pub struct ReviewFrames {
    pub reviews: DataFrame,
    pub scores: DataFrame,
}

impl ReviewFrames {
    /// Builds both frames from stored columns.
    pub(crate) fn new(reviews: ReviewColumns, scores: ScoreColumns) -> PolarsResult<Self> {
        let reviews = DataFrame::new_infer_height(vec![
            Column::new(cols::REVIEW_ID.into(), reviews.review_id),
            Column::new(cols::RUN_ID.into(), reviews.run_id),
            Column::new(cols::REVIEWER.into(), reviews.reviewer),
            Column::new(cols::GENERATOR.into(), reviews.generator),
            Column::new(cols::SENSOR.into(), reviews.sensor),
            Column::new(cols::TARGET.into(), reviews.target),
            Column::new(cols::OFFICIAL_STATUS.into(), reviews.official_status),
            Column::new(
                cols::PARSE_STATUS.into(),
                reviews
                    .parse_status
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>(),
            ),
            Column::new(cols::AVERAGE_SCORE.into(), reviews.average_score),
            Column::new(cols::OVERALL_SCORE.into(), reviews.overall_score),
            Column::new(cols::COST_USD.into(), reviews.cost_usd),
            Column::new(cols::PAID_USD.into(), reviews.paid_usd),
            Column::new(cols::CACHE_HIT.into(), reviews.cache_hit),
        ])?;
        let scores = DataFrame::new_infer_height(vec![
            Column::new(cols::REVIEW_ID.into(), scores.review_id),
            Column::new(cols::POSITION.into(), scores.position),
            Column::new(cols::CRITERION.into(), scores.criterion),
            Column::new(cols::SCORE.into(), scores.score),
        ])?;
        Ok(Self { reviews, scores })
    }

    /// Only the reviews of `reviewer` (a `provider:alias` reference).
    pub(crate) fn for_reviewer(&self, reviewer: &str) -> PolarsResult<Self> {
        let reviews = self
            .reviews
            .clone()
            .lazy()
            .filter(col(cols::REVIEWER).eq(lit(reviewer)))
            .collect()?;
        let scores = self
            .scores
            .clone()
            .lazy()
            .join(
                reviews.clone().lazy().select([col(cols::REVIEW_ID)]),
                [col(cols::REVIEW_ID)],
                [col(cols::REVIEW_ID)],
                JoinArgs::new(JoinType::Inner),
            )
            .collect()?;
        Ok(Self { reviews, scores })
    }

    /// Scores of reviews whose answer could be read, with the review's columns.
    fn scored(&self) -> LazyFrame {
        let mut args = JoinArgs::new(JoinType::Inner);
        args.maintain_order = MaintainOrderJoin::Left;
        self.scores.clone().lazy().join(
            self.reviews.clone().lazy().filter(answered()),
            [col(cols::REVIEW_ID)],
            [col(cols::REVIEW_ID)],
            args,
        )
    }
}

/// Reviews whose answer could be read (all scores, or some N/A).
fn answered() -> Expr {
    col(cols::PARSE_STATUS)
        .eq(lit(ParseStatus::Ok.as_str()))
        .or(col(cols::PARSE_STATUS).eq(lit(ParseStatus::Partial.as_str())))
}

/// The sum of `column` (cost or paid), or null (unknown) when a review with an answer has
/// none: its reviewer had no price. A sum without it would look complete and be too low.
fn sum_unless_unknown(column: &str) -> Expr {
    let answered = col(cols::PARSE_STATUS)
        .eq(lit(ParseStatus::Skipped.as_str()))
        .or(col(cols::PARSE_STATUS).eq(lit(ParseStatus::Error.as_str())))
        .not();
    when(answered.and(col(column).is_null()).any(true))
        .then(lit(NULL).cast(DataType::Float64))
        .otherwise(col(column).sum())
        .alias(column)
}

fn count_status(status: ParseStatus) -> Expr {
    col(cols::PARSE_STATUS)
        .eq(lit(status.as_str()))
        .sum()
        .cast(DataType::UInt64)
}

/// Per `by` (reviewer, generator or sensor; always within a reviewer): reviews, how many
/// were complete, had N/A scores, could not be parsed, had no official datasheet or failed,
/// the N/A scores, mean overall and mean of the P averages, cost and paid.
pub(crate) fn review_summary(frames: &ReviewFrames, by: &str) -> PolarsResult<DataFrame> {
    let keys: Vec<Expr> = if by == cols::REVIEWER {
        vec![col(cols::REVIEWER)]
    } else {
        vec![col(cols::REVIEWER), col(by)]
    };
    let na_per_review = frames
        .scored()
        .group_by([col(cols::REVIEW_ID)])
        .agg([col(cols::SCORE)
            .is_null()
            .sum()
            .cast(DataType::UInt64)
            .alias(cols::NA_SCORES)]);
    let mut args = JoinArgs::new(JoinType::Left);
    args.maintain_order = MaintainOrderJoin::Left;
    frames
        .reviews
        .clone()
        .lazy()
        .join(
            na_per_review,
            [col(cols::REVIEW_ID)],
            [col(cols::REVIEW_ID)],
            args,
        )
        .group_by_stable(keys)
        .agg([
            len().cast(DataType::UInt64).alias(cols::REVIEWS),
            count_status(ParseStatus::Ok).alias(cols::COMPLETE),
            count_status(ParseStatus::Partial).alias(cols::WITH_NA),
            count_status(ParseStatus::Failed).alias(cols::PARSE_FAILURES),
            count_status(ParseStatus::Skipped).alias(cols::NO_OFFICIAL),
            count_status(ParseStatus::Error).alias(cols::ERRORS),
            col(cols::NA_SCORES)
                .sum()
                .cast(DataType::UInt64)
                .alias(cols::NA_SCORES),
            col(cols::OVERALL_SCORE)
                .cast(DataType::Float64)
                .mean()
                .alias(cols::MEAN_OVERALL),
            col(cols::AVERAGE_SCORE).mean().alias(cols::MEAN_AVERAGE_PN),
            sum_unless_unknown(cols::COST_USD),
            sum_unless_unknown(cols::PAID_USD),
        ])
        // Of the answers received (reviews neither skipped nor failed calls), the share that
        // could not be read.
        .with_column(
            (col(cols::PARSE_FAILURES).cast(DataType::Float64) * lit(100.0)
                / (col(cols::COMPLETE) + col(cols::WITH_NA) + col(cols::PARSE_FAILURES))
                    .cast(DataType::Float64))
            .alias(cols::PARSE_FAILURE_PCT),
        )
        .with_column(
            when(
                (col(cols::COMPLETE) + col(cols::WITH_NA) + col(cols::PARSE_FAILURES))
                    .eq(lit(0u64)),
            )
            .then(lit(NULL).cast(DataType::Float64))
            .otherwise(col(cols::PARSE_FAILURE_PCT))
            .alias(cols::PARSE_FAILURE_PCT),
        )
        .collect()
}

/// Per criterion (in order) and reviewer: scores given, N/A, and the mean score; the overall
/// score last.
pub(crate) fn criterion_summary(frames: &ReviewFrames) -> PolarsResult<DataFrame> {
    let per_criterion = frames
        .scored()
        .group_by_stable([
            col(cols::POSITION),
            col(cols::CRITERION),
            col(cols::REVIEWER),
        ])
        .agg([
            col(cols::SCORE)
                .count()
                .cast(DataType::UInt64)
                .alias(cols::SCORED),
            col(cols::SCORE)
                .is_null()
                .sum()
                .cast(DataType::UInt64)
                .alias(cols::NA),
            col(cols::SCORE)
                .cast(DataType::Float64)
                .mean()
                .alias(cols::MEAN_SCORE),
        ])
        .sort(
            ["position"],
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .select([
            col(cols::CRITERION),
            col(cols::REVIEWER),
            col(cols::SCORED),
            col(cols::NA),
            col(cols::MEAN_SCORE),
        ]);
    let overall = frames
        .reviews
        .clone()
        .lazy()
        .filter(answered())
        .group_by_stable([col(cols::REVIEWER)])
        .agg([
            col(cols::OVERALL_SCORE)
                .count()
                .cast(DataType::UInt64)
                .alias(cols::SCORED),
            col(cols::OVERALL_SCORE)
                .is_null()
                .sum()
                .cast(DataType::UInt64)
                .alias(cols::NA),
            col(cols::OVERALL_SCORE)
                .cast(DataType::Float64)
                .mean()
                .alias(cols::MEAN_SCORE),
        ])
        .select([
            lit("Overall").alias(cols::CRITERION),
            col(cols::REVIEWER),
            col(cols::SCORED),
            col(cols::NA),
            col(cols::MEAN_SCORE),
        ]);
    concat([per_criterion, overall], UnionArgs::default())?.collect()
}

/// Per criterion (in order; the overall score last) and generator model, pooling reviewers:
/// scores given, their mean and its 95 % interval (Student's t; none below two scores).
pub(crate) fn criterion_generator_summary(frames: &ReviewFrames) -> PolarsResult<DataFrame> {
    let stats = |score: Expr| {
        [
            score
                .clone()
                .count()
                .cast(DataType::UInt64)
                .alias(cols::SCORED),
            score
                .clone()
                .cast(DataType::Float64)
                .mean()
                .alias(cols::MEAN_SCORE),
            score.cast(DataType::Float64).std(1).alias(cols::SD),
        ]
    };
    let per_criterion = frames
        .scored()
        .group_by_stable([
            col(cols::POSITION),
            col(cols::CRITERION),
            col(cols::GENERATOR),
        ])
        .agg(stats(col(cols::SCORE)))
        .sort(
            ["position"],
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .select([
            col(cols::CRITERION),
            col(cols::GENERATOR),
            col(cols::SCORED),
            col(cols::MEAN_SCORE),
            col(cols::SD),
        ]);
    let overall = frames
        .reviews
        .clone()
        .lazy()
        .filter(answered())
        .group_by_stable([col(cols::GENERATOR)])
        .agg(stats(col(cols::OVERALL_SCORE)))
        .select([
            lit("Overall").alias(cols::CRITERION),
            col(cols::GENERATOR),
            col(cols::SCORED),
            col(cols::MEAN_SCORE),
            col(cols::SD),
        ]);
    let mut df = concat([per_criterion, overall], UnionArgs::default())?.collect()?;
    let (low, high): (Vec<Option<f64>>, Vec<Option<f64>>) = {
        let n = df.column(cols::SCORED)?.u64()?;
        let mean = df.column(cols::MEAN_SCORE)?.f64()?;
        let sd = df.column(cols::SD)?.f64()?;
        n.iter()
            .zip(mean.iter())
            .zip(sd.iter())
            .map(|((n, mean), sd)| {
                let interval = match (n, mean, sd) {
                    (Some(n), Some(mean), Some(sd)) => mean_interval(mean, sd, n),
                    _ => None,
                };
                (interval.map(|i| i.0), interval.map(|i| i.1))
            })
            .unzip()
    };
    df.with_column(Column::new(cols::MEAN_LOW.into(), low))?;
    df.with_column(Column::new(cols::MEAN_HIGH.into(), high))?;
    df.drop("sd")
}

/// Agreement between reviewers per criterion (and overall): how many reviewers and datasheets
/// rated by at least two, quadratic-weighted Cohen's kappa (exactly two reviewers), ordinal
/// Krippendorff's alpha (any number, missing ratings allowed), and the mean score across
/// reviewers (the mean of each reviewer's mean).
pub(crate) fn agreement(frames: &ReviewFrames) -> PolarsResult<DataFrame> {
    let ratings = Ratings::collect(frames)?;
    let rows: Vec<AgreementRow> = ratings
        .order
        .iter()
        .map(|criterion| ratings.agreement(criterion))
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            cols::CRITERION.into(),
            rows.iter()
                .map(|r| r.criterion.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::REVIEWERS.into(),
            rows.iter().map(|r| r.reviewers).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::DATASHEETS_COMPARED.into(),
            rows.iter().map(|r| r.units).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::KAPPA_QUADRATIC.into(),
            rows.iter().map(|r| r.kappa).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::ALPHA_ORDINAL.into(),
            rows.iter().map(|r| r.alpha).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::MEAN_SCORE.into(),
            rows.iter().map(|r| r.mean).collect::<Vec<_>>(),
        ),
    ])
}

/// A reviewer's score of a datasheet (`None`: N/A), per datasheet.
type ByTarget = BTreeMap<String, BTreeMap<String, Option<i64>>>;

/// Every rating of the answered reviews: criterion -> target -> reviewer -> score, with the
/// criteria (then `Overall`) and the reviewers in the order first met.
struct Ratings {
    order: Vec<String>,
    reviewers: Vec<String>,
    ratings: BTreeMap<String, ByTarget>,
}

/// One criterion's agreement: a row of [`agreement`].
struct AgreementRow {
    criterion: String,
    reviewers: u64,
    units: u64,
    kappa: Option<f64>,
    alpha: Option<f64>,
    mean: Option<f64>,
}

impl Ratings {
    /// The criterion scores and overall scores of the reviews that could be read.
    fn collect(frames: &ReviewFrames) -> PolarsResult<Self> {
        let scored = frames
            .scored()
            .select([
                col(cols::CRITERION),
                col(cols::TARGET),
                col(cols::REVIEWER),
                col(cols::SCORE),
            ])
            .collect()?;
        let overall = frames
            .reviews
            .clone()
            .lazy()
            .filter(answered())
            .select([
                lit("Overall").alias(cols::CRITERION),
                col(cols::TARGET),
                col(cols::REVIEWER),
                col(cols::OVERALL_SCORE).alias(cols::SCORE),
            ])
            .collect()?;
        let mut ratings = Self {
            order: Vec::new(),
            reviewers: Vec::new(),
            ratings: BTreeMap::new(),
        };
        for df in [&scored, &overall] {
            ratings.add(df)?;
        }
        Ok(ratings)
    }

    /// Adds the ratings of `df` (criterion, target, reviewer, score).
    fn add(&mut self, df: &DataFrame) -> PolarsResult<()> {
        let criterion = df.column(cols::CRITERION)?.str()?.clone();
        let target = df.column(cols::TARGET)?.str()?.clone();
        let reviewer = df.column(cols::REVIEWER)?.str()?.clone();
        let score = df.column(cols::SCORE)?.cast(&DataType::Int64)?;
        let score = score.i64()?;
        for i in 0..df.height() {
            let (Some(c), Some(t), Some(r)) = (criterion.get(i), target.get(i), reviewer.get(i))
            else {
                continue;
            };
            if !self.order.iter().any(|o| o == c) {
                self.order.push(c.to_owned());
            }
            if !self.reviewers.iter().any(|x| x == r) {
                self.reviewers.push(r.to_owned());
            }
            self.ratings
                .entry(c.to_owned())
                .or_default()
                .entry(t.to_owned())
                .or_default()
                .insert(r.to_owned(), score.get(i));
        }
        Ok(())
    }

    /// The agreement on `criterion`.
    fn agreement(&self, criterion: &str) -> AgreementRow {
        let by_target = &self.ratings[criterion];
        let units: Vec<Vec<Option<f64>>> = by_target
            .values()
            .map(|by_reviewer| {
                self.reviewers
                    .iter()
                    .map(|r| by_reviewer.get(r).copied().flatten().map(|s| s as f64))
                    .collect()
            })
            .collect();
        let pairable = units
            .iter()
            .filter(|u| u.iter().flatten().count() >= 2)
            .count();
        AgreementRow {
            criterion: criterion.to_owned(),
            reviewers: self.reviewers.len() as u64,
            units: pairable as u64,
            kappa: self.kappa(by_target),
            alpha: krippendorff_alpha(&units, Level::Ordinal),
            mean: self.mean_of_means(by_target),
        }
    }

    /// Quadratic-weighted Cohen's kappa, with exactly two reviewers.
    fn kappa(&self, by_target: &ByTarget) -> Option<f64> {
        let [first, second] = self.reviewers.as_slice() else {
            return None;
        };
        let pairs: Vec<(i64, i64)> = by_target
            .values()
            .filter_map(|m| {
                Some((
                    m.get(first).copied().flatten()?,
                    m.get(second).copied().flatten()?,
                ))
            })
            .collect();
        // The weights' scale cancels out of kappa: the observed range is enough.
        let low = pairs.iter().map(|p| p.0.min(p.1)).min().unwrap_or(1);
        let high = pairs.iter().map(|p| p.0.max(p.1)).max().unwrap_or(1);
        weighted_kappa(&pairs, low, high.max(low + 1))
    }

    /// The mean of each reviewer's mean score.
    fn mean_of_means(&self, by_target: &ByTarget) -> Option<f64> {
        let reviewer_means: Vec<f64> = self
            .reviewers
            .iter()
            .filter_map(|r| {
                let mine: Vec<f64> = by_target
                    .values()
                    .filter_map(|m| m.get(r).copied().flatten())
                    .map(|s| s as f64)
                    .collect();
                (!mine.is_empty()).then(|| mine.iter().sum::<f64>() / mine.len() as f64)
            })
            .collect();
        (!reviewer_means.is_empty())
            .then(|| reviewer_means.iter().sum::<f64>() / reviewer_means.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two reviewers (a, b) over three datasheets; criterion P1 only, plus overall.
    fn frames() -> ReviewFrames {
        let mut r = ReviewColumns::default();
        let mut s = ScoreColumns::default();
        let rows = [
            (1, "a", "t1", "ok", Some(4), Some(4.0)),
            (2, "a", "t2", "ok", Some(2), Some(2.0)),
            (3, "a", "t3", "failed", None, None),
            (4, "b", "t1", "ok", Some(5), Some(5.0)),
            (5, "b", "t2", "partial", Some(2), Some(1.0)),
            (6, "b", "t3", "ok", Some(3), Some(3.0)),
        ];
        for (id, reviewer, target, status, overall, p1) in rows {
            r.review_id.push(id);
            r.run_id.push(1);
            r.reviewer.push(reviewer.into());
            r.generator.push("openai:gpt-4o".into());
            r.sensor.push("Bosch BME280".into());
            r.target.push(target.into());
            r.official_status.push("Found".into());
            r.parse_status.push(status.parse().unwrap());
            r.average_score.push(p1);
            r.overall_score.push(overall);
            r.cost_usd.push(Some(0.01));
            r.paid_usd.push(Some(0.0));
            r.cache_hit.push(true);
            s.review_id.push(id);
            s.position.push(0);
            s.criterion.push("P1".into());
            s.score.push(p1.map(|v| v as i64));
        }
        ReviewFrames::new(r, s).unwrap()
    }

    #[test]
    fn summary_counts_statuses_and_means() {
        let f = frames();
        let by = review_summary(&f, "reviewer").unwrap();
        assert_eq!(by.height(), 2);
        let get = |name: &str| by.column(name).unwrap().as_materialized_series().clone();
        assert_eq!(get("parse_failures").u64().unwrap().get(0), Some(1));
        assert_eq!(get("with_na").u64().unwrap().get(1), Some(1));
        assert_eq!(
            get("mean_overall").f64().unwrap().get(0),
            Some(3.0),
            "the failed review has no score"
        );
        assert_eq!(get("mean_overall").f64().unwrap().get(1), Some(10.0 / 3.0));
    }

    #[test]
    fn criteria_means_skip_unparsed_reviews() {
        let c = criterion_summary(&frames()).unwrap();
        assert_eq!(c.height(), 4, "P1 and Overall for two reviewers");
        let mean = c.column("mean_score").unwrap().f64().unwrap().clone();
        let crit = c.column("criterion").unwrap().str().unwrap().clone();
        assert_eq!((crit.get(0), mean.get(0)), (Some("P1"), Some(3.0)));
        assert_eq!((crit.get(1), mean.get(1)), (Some("P1"), Some(3.0)));
        assert_eq!(crit.get(3), Some("Overall"));
    }

    #[test]
    fn criteria_per_generator_pool_reviewers_with_intervals() {
        let c = criterion_generator_summary(&frames()).unwrap();
        let crit = c.column("criterion").unwrap().str().unwrap().clone();
        assert_eq!((crit.get(0), crit.get(1)), (Some("P1"), Some("Overall")));
        // P1 of the five answered reviews: 4, 2, 5, 1, 3.
        assert_eq!(c.column("scored").unwrap().u64().unwrap().get(0), Some(5));
        let f = |name: &str, row: usize| c.column(name).unwrap().f64().unwrap().get(row);
        assert_eq!(f("mean_score", 0), Some(3.0));
        // t(0.975; 4) = 2.776445 (the 3-digit table said 2.776).
        let half = 2.776_445 * (2.5f64).sqrt() / 5f64.sqrt();
        assert!((f("mean_low", 0).unwrap() - (3.0 - half)).abs() < 1e-6);
        assert!((f("mean_high", 0).unwrap() - (3.0 + half)).abs() < 1e-6);
        assert_eq!(f("mean_score", 1), Some(16.0 / 5.0));
    }

    #[test]
    fn agreement_matches_the_statistics() {
        let a = agreement(&frames()).unwrap();
        let crit = a.column("criterion").unwrap().str().unwrap().clone();
        assert_eq!(crit.get(0), Some("P1"));
        // P1: t1 (4, 5), t2 (2, 1); t3 only b. Kappa over the two pairs by hand.
        let kappa = a
            .column("kappa_quadratic")
            .unwrap()
            .f64()
            .unwrap()
            .get(0)
            .unwrap();
        let want = weighted_kappa(&[(4, 5), (2, 1)], 1, 5).unwrap();
        assert!((kappa - want).abs() < 1e-12);
        let alpha = a
            .column("alpha_ordinal")
            .unwrap()
            .f64()
            .unwrap()
            .get(0)
            .unwrap();
        let units = vec![
            vec![Some(4.0), Some(5.0)],
            vec![Some(2.0), Some(1.0)],
            vec![None, Some(3.0)],
        ];
        assert!((alpha - krippendorff_alpha(&units, Level::Ordinal).unwrap()).abs() < 1e-12);
        assert_eq!(
            a.column("datasheets_compared")
                .unwrap()
                .u64()
                .unwrap()
                .get(0),
            Some(2)
        );
        // Mean across reviewers: a = 3.0, b = 3.0.
        assert_eq!(
            a.column("mean_score").unwrap().f64().unwrap().get(0),
            Some(3.0)
        );
    }
}
