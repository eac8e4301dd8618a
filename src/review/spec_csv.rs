//! The specification's review CSV: `results/reviews/<ReviewerProvider>_<ReviewerModel>/
//! <Brand>_<Sensor>.csv`, one row per reviewed generated datasheet, exactly its columns in its
//! order, the header written once, and appends that never duplicate a row; and how a stored
//! review becomes such a row.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::ReviewError;
use super::criteria::Criteria;
use super::sensors::safe_component;
use crate::store::{ParseStatus, ReviewRow};

/// One review as the CSV shows it (scores already formatted: `1`-`5` or `N/A`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewCsvRow {
    pub brand: String,
    pub sensor: String,
    pub generator_provider: String,
    pub generator_model: String,
    pub reviewer_provider: String,
    pub reviewer_model: String,
    pub official_status: String,
    /// One per criterion, in order.
    pub scores: Vec<String>,
    pub average: String,
    pub overall: String,
    /// One per criterion, in order.
    pub justifications: Vec<String>,
    pub overall_justification: String,
    /// `YYYY-MM-DD HH:MM:SS` (UTC).
    pub timestamp: String,
}

/// The header: the specification's columns for the built-in criteria.
pub(crate) fn header(criteria: &Criteria) -> Vec<String> {
    let mut columns: Vec<String> = [
        "Sensor_Brand",
        "Sensor_Type",
        "Generated_Datasheet_LLM_Provider",
        "Generated_Datasheet_LLM_Model",
        "Reviewer_LLM_Provider",
        "Reviewer_LLM_Model",
        "Official_Datasheet_Status",
    ]
    .map(str::to_owned)
    .to_vec();
    columns.extend(criteria.items.iter().map(|c| c.column.clone()));
    columns.push("Average_Pn_Score".into());
    columns.push("Overall_Likert_Score".into());
    columns.extend(
        criteria
            .items
            .iter()
            .map(|c| format!("{}_Justification", c.id)),
    );
    columns.push("Overall_Justification".into());
    columns.push("Review_Timestamp".into());
    columns
}

impl ReviewCsvRow {
    fn fields(&self) -> Vec<String> {
        let mut fields = vec![
            self.brand.clone(),
            self.sensor.clone(),
            self.generator_provider.clone(),
            self.generator_model.clone(),
            self.reviewer_provider.clone(),
            self.reviewer_model.clone(),
            self.official_status.clone(),
        ];
        fields.extend(self.scores.iter().cloned());
        fields.push(self.average.clone());
        fields.push(self.overall.clone());
        fields.extend(self.justifications.iter().cloned());
        fields.push(self.overall_justification.clone());
        fields.push(self.timestamp.clone());
        fields
    }
}

/// The CSV file of a reviewer and sensor under `base`.
pub(crate) fn csv_path(base: &Path, row: &ReviewCsvRow) -> PathBuf {
    base.join(format!(
        "{}_{}",
        safe_component(&row.reviewer_provider),
        safe_component(&row.reviewer_model)
    ))
    .join(format!(
        "{}_{}.csv",
        safe_component(&row.brand),
        safe_component(&row.sensor)
    ))
}

/// Appends `row` to its file under `base` unless an identical row is already there; writes the
/// header when the file is new. Returns the path and whether a row was written.
pub(crate) fn append(
    base: &Path,
    criteria: &Criteria,
    row: &ReviewCsvRow,
) -> Result<(PathBuf, bool), ReviewError> {
    let path = csv_path(base, row);
    let write_error = |source: std::io::Error| ReviewError::Write {
        path: path.clone(),
        source,
    };
    let expected = header(criteria);
    let fields = row.fields();
    let existing = existing_rows(&path, &expected)?;
    if existing.contains(&fields) {
        return Ok((path, false));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(write_error)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(write_error)?;
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(file);
    let csv_error = |e: csv::Error| write_error(std::io::Error::other(e));
    if existing.is_empty()
        && std::fs::metadata(&path)
            .map(|m| m.len() == 0)
            .unwrap_or(true)
    {
        writer.write_record(&expected).map_err(csv_error)?;
    }
    writer.write_record(&fields).map_err(csv_error)?;
    writer.flush().map_err(write_error)?;
    Ok((path, true))
}

/// The rows already in `path` (none if it does not exist); its header must be `expected`.
fn existing_rows(path: &Path, expected: &[String]) -> Result<HashSet<Vec<String>>, ReviewError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(source) => {
            return Err(ReviewError::Read {
                what: "review CSV",
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(file);
    let mut records = reader.records();
    let invalid = |message: String| ReviewError::Invalid {
        origin: path.display().to_string(),
        message,
    };
    match records.next() {
        None => return Ok(HashSet::new()),
        Some(Ok(found)) if found.iter().eq(expected.iter().map(String::as_str)) => {}
        Some(Ok(_)) => {
            return Err(invalid(
                "its header is not the one these criteria write; move it away or review with the criteria it was written with".into(),
            ));
        }
        Some(Err(e)) => return Err(invalid(e.to_string())),
    }
    records
        .map(|r| {
            r.map(|record| record.iter().map(str::to_owned).collect())
                .map_err(|e| invalid(e.to_string()))
        })
        .collect()
}

/// Every record of a CSV file, header included.
/// A stored review as the specification's CSV row: scores or `N/A`, and for each N/A without
/// a justification the reason it is N/A.
pub(crate) fn csv_row(row: &ReviewRow) -> ReviewCsvRow {
    let score = |s: Option<i64>| s.map_or_else(|| "N/A".to_owned(), |v| v.to_string());
    let justification = |text: &Option<String>, reason: &Option<String>| match (text, reason) {
        (Some(text), _) => text.clone(),
        (None, Some(reason)) => format!("N/A: {reason}"),
        (None, None) => String::new(),
    };
    let overall_justification = if row.parse_status == ParseStatus::Failed {
        format!(
            "N/A: the reviewer's answer could not be parsed ({})",
            row.detail.as_deref().unwrap_or("no JSON object")
        )
    } else {
        justification(&row.overall_justification, &row.overall_na_reason)
    };
    ReviewCsvRow {
        brand: row.brand.clone(),
        sensor: row.sensor.clone(),
        generator_provider: row.generator_provider.clone(),
        generator_model: row.generator_model.clone(),
        reviewer_provider: row.reviewer_provider.clone(),
        reviewer_model: row.reviewer_model.clone(),
        official_status: row.official_status.clone(),
        scores: row.scores.iter().map(|s| score(s.score)).collect(),
        average: row
            .average_score
            .map_or_else(|| "N/A".to_owned(), |a| format!("{a:.2}")),
        overall: score(row.overall_score),
        justifications: row
            .scores
            .iter()
            .map(|s| justification(&s.justification, &s.na_reason))
            .collect(),
        overall_justification,
        timestamp: csv_timestamp(&row.reviewed_at),
    }
}

/// RFC 3339 as the CSV wants it: `YYYY-MM-DD HH:MM:SS` (UTC).
fn csv_timestamp(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| rfc3339.to_owned())
}

#[cfg(test)]
fn read_back(path: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .unwrap();
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(justification: &str) -> ReviewCsvRow {
        ReviewCsvRow {
            brand: "Bosch".into(),
            sensor: "BME280".into(),
            generator_provider: "anthropic".into(),
            generator_model: "claude-3.5-haiku".into(),
            reviewer_provider: "google".into(),
            reviewer_model: "gemini-1.5-pro".into(),
            official_status: "Found".into(),
            scores: (0..16)
                .map(|i| if i == 3 { "N/A".into() } else { "4".into() })
                .collect(),
            average: "4.00".into(),
            overall: "4".into(),
            justifications: (0..16).map(|_| justification.to_owned()).collect(),
            overall_justification: "ok".into(),
            timestamp: "2026-11-21 23:59:59".into(),
        }
    }

    #[test]
    fn the_header_is_the_specifications() {
        let h = header(&Criteria::builtin());
        assert_eq!(h.len(), 7 + 16 + 2 + 16 + 2);
        assert_eq!(
            h[..8],
            [
                "Sensor_Brand",
                "Sensor_Type",
                "Generated_Datasheet_LLM_Provider",
                "Generated_Datasheet_LLM_Model",
                "Reviewer_LLM_Provider",
                "Reviewer_LLM_Model",
                "Official_Datasheet_Status",
                "P1_Disclaimer_Score"
            ]
        );
        assert_eq!(h[22], "P16_Compliance_Certifications_Score");
        assert_eq!(
            h[23..26],
            [
                "Average_Pn_Score",
                "Overall_Likert_Score",
                "P1_Justification"
            ]
        );
        assert_eq!(
            h[h.len() - 2..],
            ["Overall_Justification", "Review_Timestamp"]
        );
    }

    #[test]
    fn awkward_text_round_trips_and_appends_never_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let criteria = Criteria::builtin();
        let awkward = "commas, \"quotes\",\nnew lines\r\nand ünïcödé";
        let (path, written) = append(dir.path(), &criteria, &row(awkward)).unwrap();
        assert!(written);
        assert!(
            path.ends_with("google_gemini-1.5-pro/Bosch_BME280.csv"),
            "{}",
            path.display()
        );
        let (_, again) = append(dir.path(), &criteria, &row(awkward)).unwrap();
        assert!(!again, "the same review is not written twice");
        append(dir.path(), &criteria, &row("another review")).unwrap();
        let rows = read_back(&path);
        assert_eq!(rows.len(), 3, "one header and two rows");
        assert_eq!(rows[0], header(&criteria));
        assert_eq!(rows[1][25], awkward);
        assert_eq!(rows[1][10], "N/A");
    }

    #[test]
    fn a_foreign_header_is_not_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = csv_path(dir.path(), &row("x"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        let e = append(dir.path(), &Criteria::builtin(), &row("x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("its header is not the one"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n1,2\n");
    }

    #[test]
    fn names_from_models_are_safe_paths() {
        let mut r = row("x");
        r.reviewer_provider = "openrouter".into();
        r.reviewer_model = "meta-llama/llama-3.1-70b".into();
        r.brand = "..".into();
        let path = csv_path(Path::new("base"), &r);
        assert_eq!(
            path,
            Path::new("base/openrouter_meta-llama_llama-3.1-70b/___BME280.csv")
        );
    }
}
