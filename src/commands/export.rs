//! `track export csv`: the CSV files of a kind's runs, as its registry entry writes them;
//! `track export parquet`: every table of some runs, as Parquet datasets (`export_parquet`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::LazyLock;

use anyhow::Context as _;

use super::export_parquet::{self, Selection};
use super::registry;
use super::{Context, selection_status, shown};
use crate::experiment::{ExperimentKind, Interruption};
use crate::kinds::{ExportCsv, ExportOptions, ExportRuns};
use crate::store::{RunSelector, Store, StoreError};

/// Export recorded results.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    format: ExportFormat,
}

#[derive(Debug, clap::Subcommand)]
enum ExportFormat {
    // Its help names each kind's files, from the registry.
    #[command(about = csv_about())]
    Csv(CsvArgs),
    /// Every table of the selected runs as Parquet, for DuckDB, polars or Spark: one dataset a
    /// table (each kind's results, the calls they reference, the runs), hive-partitioned by
    /// kind and run, zstd-compressed, with DIR/manifest.json counting the rows. The runs are
    /// those of every kind (or --kind's), each kind's default without --run, as for `track
    /// export csv`, `track query` and `track report`; stderr says which were exported, and
    /// which were not
    Parquet(ParquetArgs),
    /// Benchmark results as JUnit XML, for the test reports of GitLab, Jenkins and GitHub
    /// (e.g. `track export junit --out junit.xml`): a <testsuite> per run, a <testcase> per
    /// result (case, model, template, repeat) whose classname is the model; a failed check is a
    /// <failure> with the reason, an error row an <error>; time is the call's latency, in
    /// seconds (an answer from the cache keeps the latency of the run that paid for it).
    /// Follows the Jenkins/Ant schema (junit-10.xsd)
    Junit(JunitArgs),
}

#[derive(Debug, clap::Args)]
struct JunitArgs {
    /// Which benchmark runs: a run id, `latest` or `all` [default: latest]
    #[arg(long)]
    run: Option<RunSelector>,
    /// The file to write (replaced whole, never left half-written); `-` writes to stdout
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// Any kind of run, for `track export parquet --kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AnyKind(ExperimentKind);

/// Every kind, in the order of [`ExperimentKind::ALL`].
static ANY_KINDS: LazyLock<Vec<AnyKind>> =
    LazyLock::new(|| ExperimentKind::ALL.iter().map(|&k| AnyKind(k)).collect());

impl clap::ValueEnum for AnyKind {
    fn value_variants<'a>() -> &'a [Self] {
        &ANY_KINDS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.as_str()))
    }
}

#[derive(Debug, clap::Args)]
struct ParquetArgs {
    /// Only the runs of this kind [default: every kind]
    #[arg(long, value_enum)]
    kind: Option<AnyKind>,
    // Its help names each kind's default, from the registry.
    #[arg(long, help = run_help())]
    run: Option<RunSelector>,
    /// Folder to write into (created when needed); an earlier export there is added to, the
    /// partitions written again replaced
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// The kinds `--kind` offers, with their export: in the order of [`ExperimentKind::ALL`].
fn exports() -> impl Iterator<Item = (ExperimentKind, ExportCsv)> {
    ExperimentKind::ALL
        .iter()
        .filter_map(|&k| registry::kind(k).export_csv().map(|export| (k, export)))
}

/// `track export csv`'s line of help: the rule of the runs it takes, and each kind's files,
/// `bench: bench_results.csv, …; review: …`.
fn csv_about() -> String {
    let files: Vec<String> = exports()
        .map(|(k, export)| format!("{}: {}", k.as_str(), export.files))
        .collect();
    format!(
        "The CSV files of the runs of every kind (or --kind's), each kind's default without \
         --run, as for `track export parquet`, `track query` and `track report`; stderr says \
         which were exported, and which were not. Each kind's files: {}",
        files.join("; ")
    )
}

/// `--out`'s help: each kind's folder, `[default: exports/ for benchmarks, …]`.
fn out_help() -> String {
    let folders: Vec<String> = exports()
        .map(|(k, export)| {
            let noun = registry::kind(k).report_noun();
            format!("{}/ for {noun}s", export.default_out)
        })
        .collect();
    format!("Folder to write into [default: {}]", folders.join(", "))
}

/// Which experiment kind to export: one whose registry entry has a CSV export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ExportKind(ExperimentKind);

/// The kinds `--kind` offers, in the order of [`ExperimentKind::ALL`].
static EXPORT_KINDS: LazyLock<Vec<ExportKind>> =
    LazyLock::new(|| exports().map(|(k, _)| ExportKind(k)).collect());

impl clap::ValueEnum for ExportKind {
    fn value_variants<'a>() -> &'a [Self] {
        &EXPORT_KINDS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.as_str()))
    }
}

#[derive(Debug, clap::Args)]
struct CsvArgs {
    /// Only the runs of this kind [default: every kind]
    #[arg(long, value_enum)]
    kind: Option<ExportKind>,
    // Its help names each kind's default, from the registry.
    #[arg(long, help = run_help())]
    run: Option<RunSelector>,
    // Its help names each kind's default folder, from the registry.
    #[arg(long, value_name = "DIR", help = out_help())]
    out: Option<PathBuf>,
    /// Reviews made with your own criteria file: the same file, for the CSV columns.
    #[arg(long, value_name = "FILE")]
    criteria: Option<PathBuf>,
}

/// `--run`'s help: `Which runs: …` with each kind's default selection.
fn run_help() -> String {
    format!(
        "Which runs: a run id, `latest` (of each kind) or `all` [default: {}]",
        registry::default_rule_help()
    )
}

pub(crate) fn run(context: &Context, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let args = match args.format {
        ExportFormat::Csv(args) => args,
        ExportFormat::Parquet(args) => return parquet(context, args),
        ExportFormat::Junit(args) => return junit(context, args),
    };
    let store = context.open_existing_store()?;
    let kinds: Vec<ExperimentKind> = match args.kind {
        Some(k) => vec![k.0],
        None => exports().map(|(k, _)| k).collect(),
    };
    let mut exported: Vec<i64> = Vec::new();
    for &k in &kinds {
        let kind = registry::kind(k);
        let Some(export) = kind.export_csv() else {
            anyhow::bail!("{k} runs have no CSV export");
        };
        let ids = match store.select_runs(k, args.run.unwrap_or(kind.default_runs())) {
            Ok(ids) => ids,
            // Without --kind, a kind with no run (or not run ID) has nothing to export.
            Err(StoreError::NoSuchRun(_)) if args.kind.is_none() => continue,
            Err(e) => return Err(e.into()),
        };
        let (status, run_status) = selection_status(context, &store, &ids)?;
        let runs = ExportRuns {
            ids: &ids,
            status,
            run_status: &run_status,
        };
        let options = ExportOptions {
            out: args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(export.default_out)),
            criteria: args.criteria.clone(),
            quiet: context.quiet,
        };
        (export.write)(&store, &runs, &options)?;
        exported.extend(ids);
    }
    if exported.is_empty() {
        anyhow::bail!(
            "no run to export in {}: `track runs` lists the runs",
            shown(&context.db)
        );
    }
    say_what_was_exported(context, &store, &kinds, &exported, args.run.is_none())?;
    Ok(ExitCode::SUCCESS)
}

/// Says on stderr which runs of `kinds` were exported, and, when each kind's default was taken
/// (no `--run`), which were not and how to have them.
fn say_what_was_exported(
    context: &Context,
    store: &Store,
    kinds: &[ExperimentKind],
    exported: &[i64],
    by_default: bool,
) -> anyhow::Result<()> {
    let done = registry::runs_by_kind(store, kinds, |id| exported.contains(&id))?;
    context.note(format!("track: exported {}", done.join("; ")));
    if by_default {
        let left = registry::runs_by_kind(store, kinds, |id| !exported.contains(&id))?;
        if !left.is_empty() {
            context.note(format!(
                "track: not exported: {} ({}; `--run all` exports every run, `--run ID` one)",
                left.join("; "),
                registry::default_rule_help()
            ));
        }
    }
    Ok(())
}

/// `track export junit`.
fn junit(context: &Context, args: JunitArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let kind = ExperimentKind::Bench;
    let selector = args
        .run
        .unwrap_or_else(|| registry::kind(kind).default_runs());
    let ids = store.select_runs(kind, selector)?;
    if let Some(&id) = ids.first()
        && let Some(run) = store.runs_by_id(&[id])?.first()
        && run.kind != kind
    {
        anyhow::bail!(
            "run {id} is a {} run: `track export junit` writes benchmark results",
            run.kind
        );
    }
    selection_status(context, &store, &ids)?;
    let to_stdout = args.out.as_os_str() == "-";
    let written = if to_stdout {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let written = crate::bench::junit::write(&store, &ids, &mut out)?;
        std::io::Write::flush(&mut out).context("cannot write to stdout")?;
        written
    } else {
        write_whole(&args.out, |file| {
            crate::bench::junit::write(&store, &ids, file)
        })
        .with_context(|| format!("cannot write {}", shown(&args.out)))?
    };
    context.note(format!(
        "track: wrote {} ({}, {}, {}) of {} to {}",
        crate::output::count(written.tests, "test case"),
        crate::output::count(written.tests - written.failures - written.errors, "pass"),
        crate::output::count(written.failures, "failure"),
        crate::output::count(written.errors, "error"),
        registry::runs_by_kind(&store, &[kind], |id| ids.contains(&id))?.join("; "),
        if to_stdout {
            "stdout".to_owned()
        } else {
            shown(&args.out)
        }
    ));
    Ok(ExitCode::SUCCESS)
}

/// Writes the file `path` through `write`, into a hidden file beside it renamed to `path` once
/// whole: a failed write leaves `path` as it was, never half a file.
fn write_whole<T>(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    use std::io::Write as _;
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)?;
    }
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&temp)?);
        let written = write(&mut file)?;
        file.flush()?;
        std::fs::rename(&temp, path)?;
        Ok(written)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// `track export parquet`.
fn parquet(context: &Context, args: ParquetArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let selection = Selection {
        kind: args.kind.map(|k| k.0),
        runs: args.run,
    };
    let ids = export_parquet::select_runs(&store, &context.db, selection)?;
    let interruption = Interruption::listen().context("cannot listen for Ctrl-C")?;
    match export_parquet::export(&store, &ids, &args.out, &interruption) {
        Ok(_) => {
            let kinds = match args.kind {
                Some(k) => vec![k.0],
                None => ExperimentKind::ALL.to_vec(),
            };
            say_what_was_exported(context, &store, &kinds, &ids, args.run.is_none())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => match e.downcast_ref::<export_parquet::Interrupted>() {
            Some(export_parquet::Interrupted(signal)) => {
                crate::output::tell(format_args!(
                    "track: {e}: the files it finished are whole, the one it was writing is \
                     removed, and {} is as it was; the same command finishes the export",
                    args.out.join(export_parquet::MANIFEST).display()
                ));
                Ok(ExitCode::from(signal.exit_code()))
            }
            None => Err(e),
        },
    }
}
