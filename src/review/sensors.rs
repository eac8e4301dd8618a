//! Sensors (`data/sensors.csv`), their official datasheets (`datasheet/<Brand>_<Sensor>.md`),
//! and the LLM-generated datasheets under `results/<Brand>/<Sensor>/`.

use std::path::{Path, PathBuf};

use super::ReviewError;

/// A sensor of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sensor {
    pub brand: String,
    pub sensor: String,
}

/// Whether the official datasheet of a review could be had, as the CSV reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfficialStatus {
    Found,
    NotFound,
    ErrorFetching,
    NotSpecified,
}

impl OfficialStatus {
    /// The CSV and database text.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Found => "Found",
            Self::NotFound => "Not Found",
            Self::ErrorFetching => "Error Fetching",
            Self::NotSpecified => "Not Specified",
        }
    }
}

/// An official datasheet lookup: its status, text when found, and what went wrong otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Official {
    pub status: OfficialStatus,
    pub text: Option<String>,
    pub detail: Option<String>,
}

/// Reads the sensors list; needs `Brand` and `Sensor` columns (any case, other columns allowed).
pub(crate) fn load_sensors(path: &Path) -> Result<Vec<Sensor>, ReviewError> {
    let read_error = |source| ReviewError::Read {
        what: "sensors list",
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(file);
    let invalid = |message: String| ReviewError::Invalid {
        origin: path.display().to_string(),
        message,
    };
    let headers = reader
        .headers()
        .map_err(|e| invalid(e.to_string()))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let (Some(brand), Some(sensor)) = (column("Brand"), column("Sensor")) else {
        return Err(invalid(format!(
            "needs the columns `Brand` and `Sensor`; found {}",
            headers
                .iter()
                .map(|h| format!("`{h}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let mut sensors = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| invalid(format!("row {}: {e}", i + 2)))?;
        let get = |col: usize| record.get(col).unwrap_or_default().to_owned();
        // A quote left open swallows the rows after it into one field: refuse, don't guess.
        if let Some(field) = record.iter().position(|f| f.contains('\n')) {
            let line = record.position().map_or(i as u64 + 2, |p| p.line());
            return Err(invalid(format!(
                "line {line}: a quote opened in `{}` is not closed, so the rows after it run into \
                 it; close or remove the quote",
                headers.get(field).unwrap_or("a field")
            )));
        }
        let (b, s) = (get(brand), get(sensor));
        if b.is_empty() && s.is_empty() {
            continue;
        }
        sensors.push(Sensor {
            brand: b,
            sensor: s,
        });
    }
    Ok(sensors)
}

/// The official datasheet of `sensor` in `dir`, as `<Brand>_<Sensor>.md`.
pub(crate) fn load_official(dir: &Path, sensor: &Sensor) -> Official {
    if sensor.brand.is_empty() || sensor.sensor.is_empty() {
        return Official {
            status: OfficialStatus::NotSpecified,
            text: None,
            detail: Some("the sensors list gives no brand or no sensor name".into()),
        };
    }
    let path = official_path(dir, sensor);
    match std::fs::read(&path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) if !text.trim().is_empty() => Official {
                status: OfficialStatus::Found,
                text: Some(text),
                detail: None,
            },
            Ok(_) => Official {
                status: OfficialStatus::ErrorFetching,
                text: None,
                detail: Some(format!("{} is empty", path.display())),
            },
            Err(_) => Official {
                status: OfficialStatus::ErrorFetching,
                text: None,
                detail: Some(format!("{} is not UTF-8 text", path.display())),
            },
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Official {
            status: OfficialStatus::NotFound,
            text: None,
            detail: Some(format!("no official datasheet at {}", path.display())),
        },
        Err(e) => Official {
            status: OfficialStatus::ErrorFetching,
            text: None,
            detail: Some(format!("cannot read {}: {e}", path.display())),
        },
    }
}

/// `<dir>/<Brand>_<Sensor>.md`, each part made safe as a file name.
pub(crate) fn official_path(dir: &Path, sensor: &Sensor) -> PathBuf {
    dir.join(format!(
        "{}_{}.md",
        safe_component(&sensor.brand),
        safe_component(&sensor.sensor)
    ))
}

/// A name from data or a model id made safe as one path component: no separators, no `..`,
/// no control characters, never empty.
pub(crate) fn safe_component(name: &str) -> String {
    let trimmed = name.trim();
    if trimmed.chars().all(|c| c == '.') {
        // "", ".", ".." and the like would name this folder or its parent.
        return "_".repeat(trimmed.len().max(1));
    }
    let options = sanitize_filename::Options {
        replacement: "_",
        ..Default::default()
    };
    let cleaned = sanitize_filename::sanitize_with_options(trimmed, options)
        .replace(char::is_whitespace, "-");
    if cleaned.is_empty() {
        "_".into()
    } else {
        cleaned
    }
}

/// A generated datasheet file: `results/<Brand>/<Sensor>/<provider>_<model>_<YYYYMMDD_HHMMSS>.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub sensor: Sensor,
    pub provider: String,
    pub model: String,
    /// `YYYYMMDD_HHMMSS` from the file name.
    pub stamp: String,
    pub path: PathBuf,
}

/// Splits `<provider>_<model>_<YYYYMMDD>_<HHMMSS>` (a `-N` suffix after the time allowed).
pub(crate) fn parse_generated_name(stem: &str) -> Option<(String, String, String)> {
    let (provider, rest) = stem.split_once('_')?;
    let mut parts = rest.rsplitn(3, '_');
    let time = parts.next()?;
    let date = parts.next()?;
    let model = parts.next()?;
    let time_digits = time.split('-').next()?;
    let is_stamp = date.len() == 8
        && date.chars().all(|c| c.is_ascii_digit())
        && time_digits.len() == 6
        && time_digits.chars().all(|c| c.is_ascii_digit());
    (is_stamp && !provider.is_empty() && !model.is_empty()).then(|| {
        (
            provider.to_owned(),
            model.to_owned(),
            format!("{date}_{time}"),
        )
    })
}

/// The generated datasheets of `sensors` under `results`, oldest first per sensor.
pub(crate) fn find_generated(results: &Path, sensors: &[Sensor]) -> Vec<GeneratedFile> {
    let mut found = Vec::new();
    for sensor in sensors {
        let dir = results
            .join(safe_component(&sensor.brand))
            .join(safe_component(&sensor.sensor));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<GeneratedFile> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
            .filter_map(|path| {
                let stem = path.file_stem()?.to_str()?.to_owned();
                let (provider, model, stamp) = parse_generated_name(&stem)?;
                Some(GeneratedFile {
                    sensor: sensor.clone(),
                    provider,
                    model,
                    stamp,
                    path,
                })
            })
            .collect();
        files.sort_by(|a, b| (&a.stamp, &a.path).cmp(&(&b.stamp, &b.path)));
        found.extend(files);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unterminated_quote_in_the_sensors_list_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sensors.csv");
        std::fs::write(
            &path,
            "Brand,Sensor\nBosch,BME280\n\"TI,HDC1080\nSensirion,SHT31\nams,TSL2561\n",
        )
        .unwrap();
        let e = load_sensors(&path).unwrap_err().to_string();
        assert!(
            e.contains("sensors.csv: line 3: a quote opened in `Brand` is not closed"),
            "{e}"
        );
    }

    #[test]
    fn names_are_made_safe() {
        assert_eq!(
            safe_component("meta-llama/llama-3-8b"),
            "meta-llama_llama-3-8b"
        );
        assert_eq!(safe_component(".."), "__");
        assert_eq!(safe_component("."), "_");
        assert_eq!(safe_component(""), "_");
        assert_eq!(safe_component("sonnet 3.5"), "sonnet-3.5");
        assert_eq!(safe_component("a\u{0}b"), "a_b");
        assert_eq!(safe_component("gpt-4o"), "gpt-4o");
    }

    #[test]
    fn generated_names_parse() {
        assert_eq!(
            parse_generated_name("anthropic_claude-3.5-haiku_20250504_030759"),
            Some((
                "anthropic".into(),
                "claude-3.5-haiku".into(),
                "20250504_030759".into()
            ))
        );
        assert_eq!(
            parse_generated_name("openrouter_meta_llama_20250504_030759-2"),
            Some((
                "openrouter".into(),
                "meta_llama".into(),
                "20250504_030759-2".into()
            ))
        );
        assert_eq!(parse_generated_name("notes"), None);
        assert_eq!(parse_generated_name("openai_gpt-4o_2025_1"), None);
    }

    #[test]
    fn sensors_and_official_datasheets() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("sensors.csv");
        std::fs::write(
            &csv,
            "brand,Sensor,Notes\nBosch,BME280,\"temp, humidity\"\n,\n,LONELY\n",
        )
        .unwrap();
        let sensors = load_sensors(&csv).unwrap();
        assert_eq!(sensors.len(), 2);
        std::fs::write(dir.path().join("Bosch_BME280.md"), "# BME280").unwrap();
        let found = load_official(dir.path(), &sensors[0]);
        assert_eq!(
            (found.status, found.text.as_deref()),
            (OfficialStatus::Found, Some("# BME280"))
        );
        assert_eq!(
            load_official(dir.path(), &sensors[1]).status,
            OfficialStatus::NotSpecified
        );
        let missing = Sensor {
            brand: "TI".into(),
            sensor: "HDC1080".into(),
        };
        assert_eq!(
            load_official(dir.path(), &missing).status,
            OfficialStatus::NotFound
        );
        std::fs::create_dir(dir.path().join("TI_HDC1080.md")).unwrap();
        assert_eq!(
            load_official(dir.path(), &missing).status,
            OfficialStatus::ErrorFetching
        );

        std::fs::write(&csv, "Maker,Model\nBosch,BME280\n").unwrap();
        let e = load_sensors(&csv).unwrap_err().to_string();
        assert!(
            e.contains("needs the columns `Brand` and `Sensor`; found `Maker`, `Model`"),
            "{e}"
        );
    }
}
