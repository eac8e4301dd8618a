//! The pairwise experiment file (`kind: pairwise`): its candidates in one of two forms
//! (models that answer `prompts:`, or the generated datasheets under `results/`), its judges,
//! judge prompt and limits, validated into a [`PairwiseSpec`]. It reads files but calls no
//! model and opens no database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::PairwiseError;
use crate::experiment::FileBudget;
use crate::llm::SamplingParams;
use crate::review::sensors::{GeneratedFile, Sensor, find_generated, load_official, load_sensors};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    description: Option<String>,
    candidates: RawCandidates,
    judges: Vec<String>,
    #[serde(default)]
    prompts: Option<Vec<BTreeMap<String, Option<Value>>>>,
    /// The judge prompt template (`{task}`, `{reference}`, `{a}`, `{b}`).
    #[serde(default)]
    prompt: Option<PathBuf>,
    /// Most tokens of a verdict.
    #[serde(default)]
    max_tokens: Option<u32>,
    /// Most tokens of a candidate's answer (form 1).
    #[serde(default)]
    answer_max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default)]
    budget: Option<FileBudget>,
    #[serde(default)]
    batch: bool,
    #[serde(default)]
    sensors: Option<PathBuf>,
    #[serde(default)]
    datasheets: Option<PathBuf>,
    #[serde(default)]
    results: Option<PathBuf>,
    #[serde(default)]
    brand: Option<String>,
    #[serde(default)]
    sensor: Option<String>,
}

/// `candidates:` as written: a list of models, or `datasheets`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawCandidates {
    Models(Vec<RawCandidate>),
    Word(String),
}

/// One candidate model as written: its reference, or a mapping that names it and sets its own
/// system prompt or temperature (one model under two settings is two candidates).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawCandidate {
    Reference(String),
    Set(CandidateModel),
}

/// A candidate model with its own settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateModel {
    /// The model (`provider:name`).
    pub model: String,
    /// Its name in every table (default: the model's canonical reference).
    #[serde(default)]
    pub name: Option<String>,
    /// Its system prompt, instead of the prompt's or the file's.
    #[serde(default)]
    pub system: Option<String>,
    /// Its temperature, instead of the file's.
    #[serde(default)]
    pub temperature: Option<f64>,
}

impl CandidateModel {
    /// The model `reference` with no settings of its own.
    pub fn plain(reference: &str) -> Self {
        Self {
            model: reference.trim().to_owned(),
            name: None,
            system: None,
            temperature: None,
        }
    }
}

/// What is compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidates {
    /// Models, each answering every prompt (their answers are the first stage).
    Models(Vec<CandidateModel>),
    /// Generated datasheets, named by their generator (and time, when one generator has
    /// several of a sensor): `texts[item][candidate]`, `None` when it wrote none of it.
    Datasheets {
        names: Vec<String>,
        texts: Vec<Vec<Option<String>>>,
    },
}

/// One thing both candidates of a pair answer: a prompt, or a sensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The prompt's name, or the sensor (`Bosch BME280`).
    pub name: String,
    /// `{task}`: the prompt, or the sensor.
    pub text: String,
    /// `{reference}`: the expected output, or the official datasheet (empty when none).
    pub reference: String,
    /// The prompt's own system prompt and sampling (form 1).
    pub system: Option<String>,
    pub params: SamplingParams,
}

/// A validated pairwise experiment file.
#[derive(Debug, Clone)]
pub struct PairwiseSpec {
    pub path: PathBuf,
    pub sha256: String,
    pub candidates: Candidates,
    pub judges: Vec<String>,
    pub tasks: Vec<Task>,
    /// The user's judge prompt, if any.
    pub prompt: Option<PathBuf>,
    pub max_tokens: u32,
    pub repeat: u32,
    pub budget_usd: Option<f64>,
    pub batch: bool,
}

/// Default most tokens of a verdict and of an answer.
const VERDICT_MAX_TOKENS: u32 = 512;
const ANSWER_MAX_TOKENS: u32 = 512;

impl PairwiseSpec {
    /// Parses and validates the file's `text`; `path` names it in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Self, PairwiseError> {
        let invalid = |message: String| PairwiseError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawFile = serde_saphyr::from_str(text)
            .map_err(|e| PairwiseError::File(crate::yaml::describe(path, &e)))?;
        let _ = (&raw.kind, &raw.description);
        let judges: Vec<String> = raw.judges.iter().map(|j| j.trim().to_owned()).collect();
        if judges.is_empty() {
            return Err(invalid(
                "`judges:` is empty; name at least one judge model".into(),
            ));
        }
        let defaults = SamplingParams {
            temperature: Some(raw.temperature.unwrap_or(0.0)),
            max_tokens: Some(raw.answer_max_tokens.unwrap_or(ANSWER_MAX_TOKENS)),
            ..SamplingParams::default()
        };
        let (candidates, tasks) = match &raw.candidates {
            RawCandidates::Models(models) => {
                let prompts = raw.prompts.clone().ok_or_else(|| {
                    invalid("candidate models need `prompts:` to answer; add some".into())
                })?;
                let tasks =
                    prompt_tasks(prompts, raw.system.as_deref(), &defaults).map_err(invalid)?;
                let models = models
                    .iter()
                    .map(|m| match m {
                        RawCandidate::Reference(r) => CandidateModel::plain(r),
                        RawCandidate::Set(set) => CandidateModel {
                            model: set.model.trim().to_owned(),
                            ..set.clone()
                        },
                    })
                    .collect();
                (Candidates::Models(models), tasks)
            }
            RawCandidates::Word(word) if word.trim() == "datasheets" => {
                if raw.prompts.is_some() {
                    return Err(invalid(
                        "`prompts:` goes with candidate models, not `candidates: datasheets`; \
                         remove one"
                            .into(),
                    ));
                }
                datasheet_candidates(&raw).map_err(invalid)?
            }
            RawCandidates::Word(word) => {
                return Err(invalid(format!(
                    "`candidates: {word}` is neither a list of models nor `datasheets`; write \
                     `candidates: [openai:gpt-4o, anthropic:haiku 3.5]` or `candidates: \
                     datasheets`"
                )));
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            sha256: crate::hash::sha256_hex(text.as_bytes()),
            candidates,
            judges,
            tasks,
            prompt: raw.prompt.clone(),
            max_tokens: raw.max_tokens.unwrap_or(VERDICT_MAX_TOKENS),
            repeat: raw.repeat.unwrap_or(1).max(1),
            budget_usd: raw.budget.map(|b| b.0),
            batch: raw.batch,
        })
    }

    /// Whether the candidates are generated datasheets.
    pub fn datasheets(&self) -> bool {
        matches!(self.candidates, Candidates::Datasheets { .. })
    }
}

/// Fields a prompt may have besides its name.
const PROMPT_FIELDS: [&str; 7] = [
    "name",
    "prompt",
    "output",
    "expected",
    "reference",
    "system",
    "max_tokens",
];

/// The prompts as a benchmark writes them (`- name:` then `prompt:`; `output:` is the
/// reference); other fields of a benchmark's tests (`method:`…) are accepted and unused.
fn prompt_tasks(
    prompts: Vec<BTreeMap<String, Option<Value>>>,
    system: Option<&str>,
    defaults: &SamplingParams,
) -> Result<Vec<Task>, String> {
    if prompts.is_empty() {
        return Err("`prompts:` is empty; add at least one prompt".into());
    }
    let ignored = [
        "method",
        "rubric",
        "threshold",
        "judge",
        "temperature",
        "top_p",
    ];
    let mut tasks: Vec<Task> = Vec::new();
    for (index, mut fields) in prompts.into_iter().enumerate() {
        let mut name = None;
        let keys: Vec<String> = fields.keys().cloned().collect();
        for key in keys {
            if PROMPT_FIELDS.contains(&key.as_str()) || ignored.contains(&key.as_str()) {
                continue;
            }
            match fields.remove(&key).flatten() {
                None if name.is_none() => name = Some(key),
                Some(Value::Object(inner)) if name.is_none() => {
                    fields.extend(inner.into_iter().map(|(k, v)| (k, Some(v))));
                    name = Some(key);
                }
                _ => {
                    return Err(format!(
                        "prompt {}: unknown field `{key}`; a prompt has a name (`- my_prompt:`) \
                         and prompt, output (the reference), system, max_tokens",
                        index + 1
                    ));
                }
            }
        }
        let text = |key: &str| match fields.get(key).cloned().flatten() {
            Some(Value::String(s)) => Some(s),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        };
        let name = text("name")
            .or(name)
            .unwrap_or_else(|| format!("prompt_{}", index + 1));
        let prompt = text("prompt").ok_or_else(|| format!("prompt `{name}` has no `prompt:`"))?;
        if tasks.iter().any(|t| t.name == name) {
            return Err(format!(
                "two prompts are named `{name}`; names must be unique"
            ));
        }
        let mut params = defaults.clone();
        if let Some(max) = text("max_tokens") {
            params.max_tokens = Some(max.parse().map_err(|_| {
                format!("prompt `{name}`: `max_tokens: {max}` is not a whole number")
            })?);
        }
        tasks.push(Task {
            reference: text("output")
                .or(text("expected"))
                .or(text("reference"))
                .unwrap_or_default(),
            system: text("system").or(system.map(str::to_owned)),
            name,
            text: prompt,
            params,
        });
    }
    Ok(tasks)
}

/// The generators (provider, model) with two datasheets of one sensor: they are named with
/// their datasheets' times everywhere.
fn stamped_generators(files: &[GeneratedFile]) -> BTreeSet<(String, String)> {
    let mut per_sensor: BTreeMap<(&str, &str, &str, &str), usize> = BTreeMap::new();
    for f in files {
        let (brand, sensor) = (f.sensor.brand.as_str(), f.sensor.sensor.as_str());
        *per_sensor
            .entry((brand, sensor, f.provider.as_str(), f.model.as_str()))
            .or_default() += 1;
    }
    per_sensor
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|((_, _, p, m), _)| (p.to_owned(), m.to_owned()))
        .collect()
}

/// The texts of one sensor's datasheets, each with its candidate's index in `names` (added
/// when new).
fn read_versions(
    own: &[&GeneratedFile],
    stamped: &BTreeSet<(String, String)>,
    names: &mut Vec<String>,
) -> Result<Vec<(usize, String)>, String> {
    let mut versions = Vec::new();
    for f in own {
        let text = std::fs::read_to_string(&f.path)
            .map_err(|e| format!("cannot read {}: {e}", f.path.display()))?;
        let mut name = format!("{}:{}", f.provider, f.model);
        if stamped.contains(&(f.provider.clone(), f.model.clone())) {
            name = format!("{name}@{}", f.stamp);
        }
        let index = match names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        versions.push((index, text));
    }
    Ok(versions)
}

/// Form 2: every sensor of the list (filtered by `brand`, `sensor`) with two or more generated
/// datasheets under `results/`; the official datasheet is each one's reference.
fn datasheet_candidates(raw: &RawFile) -> Result<(Candidates, Vec<Task>), String> {
    let sensors_path = raw
        .sensors
        .clone()
        .unwrap_or_else(|| PathBuf::from("data/sensors.csv"));
    let official_dir = raw
        .datasheets
        .clone()
        .unwrap_or_else(|| PathBuf::from("datasheet"));
    let results = raw
        .results
        .clone()
        .unwrap_or_else(|| PathBuf::from("results"));
    let wanted = |want: &Option<String>, have: &str| {
        want.as_deref()
            .is_none_or(|w| w.trim().eq_ignore_ascii_case(have))
    };
    let sensors: Vec<Sensor> = load_sensors(&sensors_path)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|s| wanted(&raw.brand, &s.brand) && wanted(&raw.sensor, &s.sensor))
        .collect();
    let files = find_generated(&results, &sensors);
    let stamped = stamped_generators(&files);
    let mut names: Vec<String> = Vec::new();
    let mut tasks = Vec::new();
    let mut texts: Vec<Vec<(usize, String)>> = Vec::new();
    for sensor in &sensors {
        let own: Vec<&GeneratedFile> = files.iter().filter(|f| f.sensor == *sensor).collect();
        if own.len() < 2 {
            continue;
        }
        let versions = read_versions(&own, &stamped, &mut names)?;
        let official = load_official(&official_dir, sensor);
        tasks.push(Task {
            name: format!("{} {}", sensor.brand, sensor.sensor),
            text: format!("{} {}", sensor.brand, sensor.sensor),
            // No official datasheet: the judge is told so, rather than shown an empty reference.
            reference: official.text.unwrap_or_else(|| {
                format!(
                    "(none: {})",
                    official
                        .detail
                        .as_deref()
                        .unwrap_or("no official datasheet")
                )
            }),
            system: None,
            params: SamplingParams::default(),
        });
        texts.push(versions);
    }
    if tasks.is_empty() {
        return Err(format!(
            "no sensor of {} has two generated datasheets under {}/<Brand>/<Sensor>/ to compare; \
             write some with `track generate-datasheets --model M` (twice, or with two models), \
             or point `results:` at them",
            sensors_path.display(),
            results.display()
        ));
    }
    let texts = texts
        .into_iter()
        .map(|versions| {
            let mut row = vec![None; names.len()];
            for (i, text) in versions {
                row[i] = Some(text);
            }
            row
        })
        .collect();
    Ok((Candidates::Datasheets { names, texts }, tasks))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PairwiseSpec, String> {
        PairwiseSpec::parse(Path::new("p.yaml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn candidates_are_references_or_models_with_settings_of_their_own() {
        let spec = parse(
            "kind: pairwise\ncandidates:\n  - openai:gpt-4o\n  - model: local:smollm2\n    \
             name: terse\n    system: Be brief.\njudges: [openai:gpt-4o-mini]\nmax_tokens: 64\n\
             prompts:\n  - capital:\n    prompt: Capital of France?\n    output: Paris\n    \
             method: icontains\n",
        )
        .unwrap();
        let Candidates::Models(models) = &spec.candidates else {
            panic!("{:?}", spec.candidates);
        };
        assert_eq!(models[0], CandidateModel::plain("openai:gpt-4o"));
        assert_eq!(models[1].name.as_deref(), Some("terse"));
        assert_eq!(models[1].system.as_deref(), Some("Be brief."));
        assert_eq!(spec.tasks[0].name, "capital");
        assert_eq!(spec.tasks[0].reference, "Paris");
        assert_eq!((spec.max_tokens, spec.repeat), (64, 1));
    }

    #[test]
    fn bad_files_name_the_thing_and_the_fix() {
        for (text, want) in [
            (
                "candidates: everything\njudges: [a:b]\n",
                "`candidates: everything` is neither a list of models nor `datasheets`",
            ),
            (
                "candidates: [a:b, c:d]\njudges: []\nprompts: []\n",
                "`judges:` is empty",
            ),
            (
                "candidates: [a:b, c:d]\njudges: [e:f]\nprompts: []\n",
                "`prompts:` is empty",
            ),
            (
                "candidates: [a:b, c:d]\njudges: [e:f]\nprompts:\n  - x:\n    output: y\n",
                "prompt `x` has no `prompt:`",
            ),
            ("candidates: [a:b]\njudge: [e:f]\n", "p.yaml"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
