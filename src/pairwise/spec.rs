//! The pairwise experiment file (`kind: pairwise`): its candidates in one of two forms
//! (models that answer `prompts:`, or the generated datasheets under `results/`), its judges,
//! judge prompt and limits, validated into a [`PairwiseSpec`]. It reads files but calls no
//! model and opens no database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::PairwiseError;
use crate::bench::item::{ItemError, take_name};
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
    /// A list of models, or `datasheets`: read by [`read_candidates`], which names a bad key.
    #[serde(deserialize_with = "crate::yaml::as_written")]
    candidates: Value,
    judges: Vec<String>,
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    prompts: Option<Vec<Map<String, Value>>>,
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

/// `candidates:` as read: a list of models, or a word (`datasheets`).
#[derive(Debug)]
enum RawCandidates {
    Models(Vec<CandidateModel>),
    Word(String),
}

/// The keys of a candidate written as a mapping.
const CANDIDATE_KEYS: [&str; 4] = ["model", "name", "system", "temperature"];

/// `candidates:` as written: a list whose items are a model reference or a mapping that names
/// one and sets its own system prompt or temperature (one model under two settings is two
/// candidates), or a word. An error comes with the candidate's index, for its line.
fn read_candidates(value: Value) -> Result<RawCandidates, (Option<usize>, ItemError)> {
    let items = match value {
        Value::String(word) => return Ok(RawCandidates::Word(word)),
        Value::Array(items) => items,
        Value::Null => {
            return Err((
                None,
                "`candidates:` is empty; list two or more models, or write `candidates: \
                 datasheets`"
                    .to_owned()
                    .into(),
            ));
        }
        other => {
            return Err((
                None,
                format!(
                    "`candidates: {other}` is neither a list of models nor `datasheets`; write \
                     `candidates: [openai:gpt-4o, anthropic:haiku 3.5]` or `candidates: \
                     datasheets`"
                )
                .into(),
            ));
        }
    };
    let mut models = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let at = |e: ItemError| (Some(index), e);
        let label = format!("candidate {}", index + 1);
        match item {
            Value::String(reference) => models.push(CandidateModel::plain(&reference)),
            Value::Object(fields) => models.push(candidate_model(&label, fields).map_err(at)?),
            other => {
                return Err(at(format!(
                    "{label} is `{other}`: write a model (`openai:gpt-4o`) or a mapping of {}",
                    CANDIDATE_KEYS.join(", ")
                )
                .into()));
            }
        }
    }
    Ok(RawCandidates::Models(models))
}

/// A candidate written as a mapping: its keys checked, then read.
fn candidate_model(label: &str, fields: Map<String, Value>) -> Result<CandidateModel, ItemError> {
    if let Some(key) = fields
        .keys()
        .find(|k| !CANDIDATE_KEYS.contains(&k.as_str()))
    {
        let hint = if key.starts_with("prompt") {
            " (a candidate's own instructions go in `system:`; what every candidate answers \
             goes under `prompts:` at the top of the file)"
        } else {
            ""
        };
        return Err(ItemError {
            message: format!(
                "{label}: {}{hint}",
                crate::yaml::unknown_key(key, &CANDIDATE_KEYS)
            ),
            keys: vec![key.clone()],
        });
    }
    if !fields.contains_key("model") {
        return Err(format!(
            "{label} has no `model:` (the <provider>:<name> it runs); its keys may be {}",
            CANDIDATE_KEYS.join(", ")
        )
        .into());
    }
    let model: CandidateModel = serde_json::from_value(Value::Object(fields))
        .map_err(|e| ItemError::from(format!("{label}: {e}")))?;
    Ok(CandidateModel {
        model: model.model.trim().to_owned(),
        ..model
    })
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
    pub(crate) fn plain(reference: &str) -> Self {
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
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, PairwiseError> {
        let invalid_at = |line: Option<u64>, message: String| PairwiseError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        };
        let invalid = |message: String| invalid_at(None, message);
        let options = serde_saphyr::Options::default();
        let raw: RawFile = crate::yaml::from_str(text, options).map_err(|e| {
            PairwiseError::File(
                crate::bench::spec::prompts_from_a_file(path, text)
                    .unwrap_or_else(|| crate::yaml::describe(path, text, &e)),
            )
        })?;
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
        let raw_candidates = read_candidates(raw.candidates.clone()).map_err(|(index, e)| {
            let line = match index {
                Some(index) => e.line(text, "candidates", index),
                None => crate::yaml::line_at(text, &[crate::yaml::Step::Key("candidates")]),
            };
            invalid_at(line, e.message)
        })?;
        let (candidates, tasks) = match raw_candidates {
            RawCandidates::Models(models) => {
                let prompts = raw.prompts.clone().ok_or_else(|| {
                    invalid("candidate models need `prompts:` to answer; add some".into())
                })?;
                let tasks = prompt_tasks(prompts, raw.system.as_deref(), &defaults)
                    .map_err(|(index, e)| invalid_at(e.line(text, "prompts", index), e.message))?;
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
    pub(crate) fn datasheets(&self) -> bool {
        matches!(self.candidates, Candidates::Datasheets { .. })
    }
}

/// Keys a prompt may have: its own, then those of a benchmark's tests, accepted (so that a
/// benchmark's `prompts:` can be pasted) and unused.
const PROMPT_FIELDS: [&str; 13] = [
    "name",
    "prompt",
    "output",
    "expected",
    "reference",
    "system",
    "max_tokens",
    "method",
    "rubric",
    "threshold",
    "judge",
    "temperature",
    "top_p",
];

/// The prompts as a benchmark writes them (`- name:` then `prompt:`; `output:` is the
/// reference); other keys of a benchmark's tests (`method:`…) are accepted and unused. An error
/// comes with the prompt's index, for its line.
fn prompt_tasks(
    prompts: Vec<Map<String, Value>>,
    system: Option<&str>,
    defaults: &SamplingParams,
) -> Result<Vec<Task>, (usize, ItemError)> {
    if prompts.is_empty() {
        return Err((
            0,
            "`prompts:` is empty; add at least one prompt"
                .to_owned()
                .into(),
        ));
    }
    let mut tasks: Vec<Task> = Vec::new();
    for (index, mut fields) in prompts.into_iter().enumerate() {
        let at = |e: ItemError| (index, e);
        let name = take_name("prompt", index + 1, &mut fields, &PROMPT_FIELDS).map_err(at)?;
        let text = |key: &str| match fields.get(key).cloned() {
            Some(Value::String(s)) => Some(s),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        };
        let name = text("name")
            .or(name)
            .unwrap_or_else(|| format!("prompt_{}", index + 1));
        let prompt =
            text("prompt").ok_or_else(|| at(format!("prompt `{name}` has no `prompt:`").into()))?;
        if tasks.iter().any(|t| t.name == name) {
            return Err(at(format!(
                "two prompts are named `{name}`; names must be unique"
            )
            .into()));
        }
        let mut params = defaults.clone();
        if let Some(max) = text("max_tokens") {
            params.max_tokens = Some(max.parse().map_err(|_| {
                at(format!("prompt `{name}`: `max_tokens: {max}` is not a whole number").into())
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
    fn references_and_names_are_kept_as_written_and_settings_read_as_numbers() {
        let spec = parse(
            "candidates:\n  - model: a:b\n    name: 1.10\n    temperature: 0.70\n  - c:d\n\
             judges: [e:f]\nprompts:\n  - alive:\n    prompt: Is a cat alive?\n    output: yes\n\
             \x20 - 001:\n    prompt: Hex?\n    output: 0x1F\n",
        )
        .unwrap();
        let Candidates::Models(models) = &spec.candidates else {
            panic!("{:?}", spec.candidates);
        };
        assert_eq!(models[0].name.as_deref(), Some("1.10"));
        assert_eq!(models[0].temperature, Some(0.7));
        assert_eq!(spec.tasks[0].reference, "yes");
        assert_eq!(
            (
                spec.tasks[1].name.as_str(),
                spec.tasks[1].reference.as_str()
            ),
            ("001", "0x1F")
        );
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
            (
                "candidates:\n  - model: a:b\n    systm: hi\n  - c:d\njudges: [e:f]\nprompts:\n  - x:\n    prompt: y\n",
                "p.yaml:3: candidate 1: unknown key `systm`; did you mean `system`? valid keys: model, name, system, temperature",
            ),
            (
                "candidates:\n  - a:b\n  - model: c:d\n    prompt: y\njudges: [e:f]\nprompts:\n  - x:\n    prompt: y\n",
                "p.yaml:4: candidate 2: unknown key `prompt`; valid keys: model, name, system, temperature (a candidate's own instructions go in `system:`",
            ),
            (
                "candidates:\n  - a:b\n  - name: terse\njudges: [e:f]\n",
                "p.yaml:3: candidate 2 has no `model:`",
            ),
            (
                "candidates:\n  - a:b\n  - [c:d]\njudges: [e:f]\n",
                "p.yaml:3: candidate 2 is `[\"c:d\"]`: write a model",
            ),
            (
                "candidates: [a:b, c:d]\njudges: [e:f]\nprompts:\n  - name: x\n    prompt: y\n    vars: {country: France}\n",
                "p.yaml:6: prompt `x`: unknown key `vars`; valid keys: name, prompt, output",
            ),
            (
                "candidates: [a:b, c:d]\njudges: [e:f]\nprompts:\n  - x:\n      prompt: y\n      refrence: z\n",
                "p.yaml:6: prompt `x`: unknown key `refrence`; did you mean `reference`?",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains("untagged"), "{text}: {e}");
        }
    }
}
