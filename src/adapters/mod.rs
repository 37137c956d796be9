//! Input adapters: one item of an input (a JSON Lines line, a member of a ZIP log, an
//! element of a JSON document) plus its import context in, zero or more schema-v1 records
//! (or a field-precise error) out.
//!
//! This is where the data contract's semantics live: stable-ID lookup, answer keys,
//! correctness, conversions. Adapters never touch the filesystem and hold no global state;
//! the archive (through `inputs` for documents and archives) feeds them items and stores
//! what they return.
//!
//! The formats are a registry, [`REGISTRY`]: each adapter file defines one [`Adapter`]
//! value ([`Adapter::new`]: its name, normalizer version, how its input is read, its
//! hooks) and joins the registry with one line. Nothing else matches on formats: a new
//! format is one new file here plus that line (and its `mod` line). What every adapter
//! shares is in [`kit`] (the record builder, the line reader, the structured formats'
//! [`kit::ItemMembers`]), in [`stable_id`] (the identity checks) and
//! here (the checks of the run's context: benchmark, language, script, model), so an
//! adapter file holds only its mapping decisions.

pub mod canonical;
pub mod eee;
pub mod harness;
pub mod helm;
pub mod inspect;
pub mod kit;
pub mod lighteval;
pub mod opencompass;
pub mod paired;
pub mod stable_id;

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

pub use kit::{JsonLine, LineFields};

use crate::jsonl::FieldPath;
use crate::record::{FieldError, NewRecord, fields::describe};

/// Every input format `babel import --format` accepts, in the order `--help` lists them.
pub const REGISTRY: &[&Adapter] = &[
    &canonical::ADAPTER,
    &paired::ADAPTER,
    &harness::ADAPTER,
    &inspect::ADAPTER,
    &helm::ADAPTER,
    &eee::ADAPTER,
    &lighteval::ADAPTER,
    &opencompass::ADAPTER,
];

/// One input format.
pub struct Adapter {
    /// The name used on the command line and in manifests.
    pub name: &'static str,
    /// One line for `--help`.
    pub summary: &'static str,
    /// The version of the adapter's normalization rules, recorded with every import:
    /// `<name>/<n>`. Bump `n` whenever the same input would normalize to other records.
    pub normalizer_version: &'static str,
    /// How the input is read and handed to the adapter.
    pub reader: Reader,
    /// Checks the per-import options once, before anything is read: a combination the
    /// format cannot honour is a usage error, not a problem on every item.
    pub check_options: fn(&AdapterOptions) -> Result<(), String>,
    /// Checks what can be told about a file before its items (the harness reads its
    /// benchmark from the file name), so a problem of the whole file is reported once.
    pub check_source: fn(&ImportContext<'_>) -> Result<(), AdapterError>,
    /// Variants an import writes besides its `--variant` (a paired import's `original`):
    /// validate accepts them beside the variant override.
    pub fixed_variants: &'static [&'static str],
}

impl Adapter {
    /// A format read by `reader` that takes every option, accepts every file before its
    /// items and writes no fixed variant; the `with_` functions say otherwise.
    pub const fn new(
        name: &'static str,
        summary: &'static str,
        normalizer_version: &'static str,
        reader: Reader,
    ) -> Self {
        Self {
            name,
            summary,
            normalizer_version,
            reader,
            check_options: no_option_rules,
            check_source: any_source,
            fixed_variants: &[],
        }
    }

    /// The format with rules on the per-import options ([`Adapter::check_options`]).
    pub const fn with_option_rules(
        mut self,
        check_options: fn(&AdapterOptions) -> Result<(), String>,
    ) -> Self {
        self.check_options = check_options;
        self
    }

    /// The format with a check of each file before its items ([`Adapter::check_source`]).
    pub const fn with_source_check(
        mut self,
        check_source: fn(&ImportContext<'_>) -> Result<(), AdapterError>,
    ) -> Self {
        self.check_source = check_source;
        self
    }

    /// The format with variants it writes besides `--variant` ([`Adapter::fixed_variants`]).
    pub const fn with_fixed_variants(mut self, variants: &'static [&'static str]) -> Self {
        self.fixed_variants = variants;
        self
    }
}

/// How an adapter's input is read.
pub enum Reader {
    /// JSON Lines, one nonblank line at a time, read in parallel batches into members
    /// (canonical text, no tree): every line format.
    Lines(LinesHook),
    /// A structured file (a ZIP log, a JSON document): its header first, then its items.
    Items(Structured),
}

/// A line adapter: one line in, its records appended to `out` (borrowing from the line
/// and the context where they pass values through), or the first problem.
pub type LinesHook = for<'a> fn(
    JsonLine<'a>,
    &'a ImportContext<'a>,
    &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError>;

/// The hooks of a format whose input is not JSON Lines. The archive reads the file (with
/// `inputs`) as [`Structured::layout`] says, hands the header to [`Structured::begin`],
/// then each item, with its locator, to [`Structured::normalize`].
pub struct Structured {
    /// How an input is laid out, by its name (an Inspect log is a `.eval` ZIP or a
    /// `.json` document); an error says what it should be. A format whose inputs are
    /// folders (a HELM run) returns [`Layout::Folder`] for every name, even an empty one:
    /// that is how the archive knows to open a folder.
    pub layout: fn(&str) -> Result<Layout, String>,
    /// Reads the header (the members [`Layout`] names, parsed, and the index of an
    /// [`Indexed`] file) into what every item needs, and the producer's facts the
    /// manifest keeps.
    pub begin: fn(Header, &ImportContext<'_>) -> Result<Begun, AdapterError>,
    /// Normalizes one item, read as members (a Parquet row's columns are its members),
    /// into records appended to `out`.
    pub normalize: MembersHook,
    /// For a format whose input is a producer's output folder holding many result files
    /// (lighteval, OpenCompass): splits the input into [`Unit`]s, one import each. `None`
    /// for a format whose input is one file or one run folder.
    pub units: Option<PlanUnits>,
    /// Checks, once every item was normalized, what only the whole file can show (an
    /// OpenCompass results file scoring items its predictions file does not hold). `None`
    /// when there is nothing to check.
    pub finish: Option<Finish>,
}

impl Structured {
    /// The hooks of a format whose input is one file or one run folder.
    pub const fn new(
        layout: fn(&str) -> Result<Layout, String>,
        begin: fn(Header, &ImportContext<'_>) -> Result<Begun, AdapterError>,
        normalize: MembersHook,
    ) -> Self {
        Self {
            layout,
            begin,
            normalize,
            units: None,
            finish: None,
        }
    }

    /// The hooks of a format with a check of the whole file after its items.
    pub const fn with_finish(mut self, finish: Finish) -> Self {
        self.finish = Some(finish);
        self
    }

    /// The hooks of a format whose input is an output folder, split by `units`.
    pub const fn with_units(mut self, units: PlanUnits) -> Self {
        self.units = Some(units);
        self
    }
}

/// A structured format's adapter of one item, read as members (canonical text, no tree,
/// as a line adapter's): its records, borrowing from them, appended to `out`, or the
/// first problem.
pub type MembersHook = for<'a> fn(
    &'a Begun,
    MembersItem<'a>,
    &'a ImportContext<'a>,
    &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError>;

/// One item of a structured file as the streaming reader read it.
#[derive(Debug, Clone, Copy)]
pub struct MembersItem<'a> {
    /// The item's top-level members, each value as canonical text.
    pub members: &'a crate::jsonl::Members,
    /// Where it is in the file.
    pub locator: &'a crate::record::Locator,
}

/// The check of a whole file after its items ([`Structured::finish`]).
pub type Finish = fn(&Begun) -> Result<(), AdapterError>;

/// Splits an input into units, or says why it cannot ([`Structured::units`]).
pub type PlanUnits = fn(&Listing<'_>) -> Result<Vec<Unit>, String>;

/// What the archive found at an input path, for [`Structured::units`]: every regular file
/// under a folder (`/`-separated paths relative to it, sorted), or a file alone.
pub struct Listing<'a> {
    /// The relative paths of a folder's files; a file input's path as given, alone.
    pub files: &'a [String],
    /// Whether the input is a folder.
    pub folder: bool,
}

impl Listing<'_> {
    /// The units of the input: one for each file `unit` makes one of, and at least one
    /// (`none` says what a folder without any lacks).
    pub fn units(
        &self,
        none: &str,
        unit: impl Fn(&str) -> Result<Option<Unit>, String>,
    ) -> Result<Vec<Unit>, String> {
        let mut units = Vec::new();
        for path in self.files {
            units.extend(unit(path)?);
        }
        if units.is_empty() {
            return Err(none.to_owned());
        }
        Ok(units)
    }

    /// What a file that is not the format's makes: nothing in a folder (its other files
    /// are passed over); a file input is refused, saying `why`.
    pub fn not_a_unit(&self, why: String) -> Result<Option<Unit>, String> {
        if self.folder { Ok(None) } else { Err(why) }
    }
}

/// One import of a [`Structured::units`] input: a file whose items make records, and the
/// files read whole as its header (keyed by role, as [`Header::members`] holds them).
/// Paths are relative to the input folder, or, for a file input, to the file's own
/// folder (where `../` reaches a sibling the producer always writes, which is refused if
/// it is a link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// What the unit is called (a task, a dataset abbreviation): `--ids NAME=FILE` names it.
    pub name: String,
    /// The file whose items make records.
    pub items: String,
    /// The header files, by role.
    pub header: Vec<(&'static str, String)>,
    /// Whether `--ids NAME=FILE` may give the unit a dataset file (role `ids`).
    pub takes_ids: bool,
}

/// Where a structured file's header and items are.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// A ZIP archive: `header` members are read first, whole (missing ones are absent from
    /// the header); the items are the members for which `item` is true, in the order of
    /// the central directory.
    Zip {
        header: &'static [&'static str],
        item: fn(&str) -> bool,
    },
    /// A JSON document: the top-level members named in `header` are kept, the items are
    /// the elements of `items`.
    Document {
        header: &'static [&'static str],
        items: crate::inputs::document::Items<'static>,
    },
    /// A folder of JSON files (a HELM run): every regular file is archived; the files
    /// named in `header` are read whole (missing ones are absent from the header, keyed
    /// by file name); the items are the elements of `items` in the document `items_file`.
    Folder {
        header: &'static [&'static str],
        items_file: &'static str,
        items: crate::inputs::document::Items<'static>,
        indexed: Option<Indexed>,
    },
    /// One file of a [`Structured::units`] input; the header is the unit's header files,
    /// parsed, keyed by role (a `.jsonl` file as the array of its lines).
    Rows(Rows),
}

/// How the items of a [`Layout::Rows`] file are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// A Parquet file: each row is an item, located by the pointer `/<row>` (zero-based,
    /// in file order).
    Parquet,
    /// A JSON object read whole: each member is an item, located by `/<key>`.
    Members,
}

impl Layout {
    /// How the items of a file of this layout are read, at import and in validate.
    pub fn shape(&self) -> Box<dyn crate::inputs::Shape> {
        use crate::inputs::{document, parquet, zip};
        match *self {
            Layout::Zip { item, .. } => Box::new(zip::ZipItems { item }),
            Layout::Document { items, .. } | Layout::Folder { items, .. } => {
                Box::new(document::ArrayItems { items })
            }
            Layout::Rows(Rows::Parquet) => Box::new(parquet::ParquetRows),
            Layout::Rows(Rows::Members) => Box::new(document::MemberItems),
        }
    }
}

/// A header file of a folder too large to be read whole (a HELM run's
/// `per_instance_stats.json` can be hundreds of megabytes): a JSON array whose elements
/// are parsed one at a time and handed to `add`, which keeps, in the adapter's own
/// compact form, what the items need. Memory then grows with what is kept, not with the
/// file.
#[derive(Debug, Clone, Copy)]
pub struct Indexed {
    /// The file's name in the folder.
    pub file: &'static str,
    /// An empty index.
    pub new: fn() -> Box<dyn std::any::Any + Send + Sync>,
    /// Reads one element, its members as the streaming reader wrote them (canonical text,
    /// no tree), into what the index keeps of it, on a worker thread.
    pub read: fn(&crate::jsonl::Members) -> Result<IndexEntry, AdapterError>,
    /// Adds what `read` kept of one element to the index, element after element in file
    /// order.
    pub add: fn(&mut (dyn std::any::Any + Send + Sync), IndexEntry) -> Result<(), AdapterError>,
}

/// What an [`Indexed`] file's `read` keeps of one element, for its `add`.
pub type IndexEntry = Box<dyn std::any::Any + Send>;

/// What a structured file's header holds when [`Structured::begin`] reads it.
pub struct Header {
    /// The header members (or files) the layout names, parsed; a missing one is absent.
    pub members: serde_json::Map<String, Value>,
    /// The index an [`Indexed`] file built, when the folder holds that file.
    pub index: Option<Box<dyn std::any::Any + Send + Sync>>,
}

/// What [`Structured::begin`] made of a header.
pub struct Begun {
    /// The adapter's own state for its items.
    pub state: Box<dyn std::any::Any + Send + Sync>,
    /// The producer's facts (framework and version, model, task, dataset, revision), kept
    /// in the import's manifest entry as `producer`.
    pub producer: serde_json::Map<String, Value>,
}

/// A format: a reference into [`REGISTRY`].
#[derive(Clone, Copy)]
pub struct Format(&'static Adapter);

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Format {}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl Format {
    /// Records written directly in the schema-v1 contract.
    pub const CANONICAL: Format = Format(&canonical::ADAPTER);
    /// One line per question with an `original` and a `rephrased` result.
    pub const PAIRED: Format = Format(&paired::ADAPTER);
    /// lm-evaluation-harness `samples_<task>_<date>.jsonl` (`--log_samples`).
    pub const HARNESS: Format = Format(&harness::ADAPTER);
    /// Inspect AI eval logs, `.eval` or `.json`.
    pub const INSPECT: Format = Format(&inspect::ADAPTER);
    /// A HELM run folder.
    pub const HELM: Format = Format(&helm::ADAPTER);
    /// Every Eval Ever instance-level rows.
    pub const EEE: Format = Format(&eee::ADAPTER);
    /// lighteval details Parquet files.
    pub const LIGHTEVAL: Format = Format(&lighteval::ADAPTER);
    /// OpenCompass predictions and results.
    pub const OPENCOMPASS: Format = Format(&opencompass::ADAPTER);

    /// Every format, in registry order.
    pub fn all() -> impl Iterator<Item = Format> {
        REGISTRY.iter().copied().map(Format)
    }

    /// Reads a format name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::all().find(|f| f.name() == name)
    }

    /// The name used on the command line and in manifests.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The adapter behind the format.
    pub fn adapter(self) -> &'static Adapter {
        self.0
    }

    /// The version of this adapter's normalization rules, recorded with every import.
    pub fn normalizer_version(self) -> &'static str {
        self.0.normalizer_version
    }

    /// How a [`Structured::units`] format splits its inputs, if it is one.
    pub fn units(self) -> Option<PlanUnits> {
        match &self.0.reader {
            Reader::Items(structured) => structured.units,
            Reader::Lines(_) => None,
        }
    }

    /// Whether the format's inputs are folders (a HELM run), not files: its layout is a
    /// folder whatever the name (the contract of [`Structured::layout`]).
    pub fn reads_folders(self) -> bool {
        match &self.0.reader {
            Reader::Items(structured) => {
                matches!((structured.layout)(""), Ok(Layout::Folder { .. }))
            }
            Reader::Lines(_) => false,
        }
    }

    /// See [`Adapter::check_options`].
    pub fn check_options(self, options: &AdapterOptions) -> Result<(), String> {
        (self.0.check_options)(options)
    }
}

/// An adapter hook that accepts everything.
pub fn no_option_rules(_: &AdapterOptions) -> Result<(), String> {
    Ok(())
}

/// An adapter hook that accepts every file.
pub fn any_source(_: &ImportContext<'_>) -> Result<(), AdapterError> {
    Ok(())
}

/// What the destination run says about every record imported into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunContext {
    pub run_id: String,
    /// The evaluated model; records must agree.
    pub model: String,
    /// The run's benchmark, when it declares one; records must agree.
    pub benchmark: Option<String>,
    /// Run metadata `correctness_metric`: the binary metric that sets `correct`.
    pub correctness_metric: Option<String>,
    /// Run metadata `shared_answer_key: true`.
    pub shared_answer_key: bool,
    /// A strict benchmark run: records must carry `script`.
    pub strict: bool,
}

/// Per-import choices from the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdapterOptions {
    /// `--variant`: the variant of every record of the import.
    pub variant: Option<String>,
    /// `--id-field`: where the stable question ID is, instead of the automatic lookup.
    pub id_field: Option<FieldPath>,
    /// `--benchmark`: the benchmark of records that do not name one.
    pub benchmark: Option<String>,
    /// `--language`: the language of records that do not name one.
    pub language: Option<String>,
    /// `--allow-other-model`: a file whose own model differs from the run's is imported
    /// (each record then says so) instead of refused.
    pub allow_other_model: bool,
}

/// Checks the model a file names for itself (an Inspect log's `eval.model`, a HELM run's
/// `adapter_spec.model`, an Every Eval Ever row's `model_id`) against the run's `model`,
/// as a canonical record's `model` is checked: a file of another model is refused,
/// naming both, unless the import allows it (`--allow-other-model`), when the returned
/// warning goes on every record. `own` is `None` when the file names no model.
pub fn check_model(
    own: Option<&str>,
    at: FieldPath,
    what: &str,
    context: &ImportContext<'_>,
) -> Result<Option<String>, AdapterError> {
    let run_model = context.run.model.as_str();
    match own {
        None => Ok(None),
        Some(own) if own == run_model => Ok(None),
        Some(own) if context.options.allow_other_model => Ok(Some(format!(
            "{what} is {own:?}, not the run's model {run_model:?}; imported with --allow-other-model"
        ))),
        Some(own) => Err(AdapterError::new(
            at,
            format!("{what} is {own:?}, but run {} is of model {run_model:?}", context.run.run_id),
        )
        .with_hint(format!(
            "import it into a run of that model (`babel run create RUN --model '{own}'`), or pass --allow-other-model to keep it in this run with a warning on every record"
        ))),
    }
}

/// The input file a line comes from.
#[derive(Debug, Clone, Copy)]
pub struct SourceFile<'a> {
    /// ROOT-relative path of its archived raw copy (becomes `source.path`).
    pub raw_path: &'a str,
    /// The file name as the user gave it (the harness reads its task name from it).
    pub basename: &'a str,
    /// The name of the folder the file is in, as the user gave it (OpenCompass names the
    /// model by it), or empty.
    pub folder: &'a str,
}

/// Everything an adapter may consult besides the line itself.
#[derive(Debug, Clone, Copy)]
pub struct ImportContext<'a> {
    pub run: &'a RunContext,
    pub options: &'a AdapterOptions,
    pub source: SourceFile<'a>,
}

/// A line the adapter cannot turn into records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterError {
    /// The field at fault (the root path when it is the line as a whole).
    pub path: FieldPath,
    pub message: String,
    /// What the user can do about it.
    pub hint: Option<String>,
}

impl AdapterError {
    /// An error at `path`.
    pub fn new(path: FieldPath, message: impl Into<String>) -> Self {
        Self {
            path,
            message: message.into(),
            hint: None,
        }
    }

    /// The same error with a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl From<FieldError> for AdapterError {
    fn from(error: FieldError) -> Self {
        Self::new(error.path, error.message)
    }
}

impl fmt::Display for AdapterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_root() {
            f.write_str(&self.message)
        } else {
            write!(f, "field {}: {}", self.path, self.message)
        }
    }
}

/// The benchmark of a line that may name its own (the top-level member `benchmark`): the
/// line's value, `--benchmark` and the run's benchmark must agree wherever two of them are
/// given; at least one must be.
pub fn benchmark<'a>(
    own: Option<Cow<'a, str>>,
    context: &'a ImportContext<'a>,
) -> Result<Cow<'a, str>, AdapterError> {
    let benchmark = agree(
        "benchmark",
        own,
        context.run.benchmark.as_deref(),
        "the run's benchmark",
    )?;
    agree(
        "benchmark",
        benchmark,
        context.options.benchmark.as_deref(),
        "--benchmark",
    )?
    .ok_or_else(|| {
        AdapterError::new(FieldPath::root().key("benchmark"), "required field is missing").with_hint(
            "name the benchmark in each line, with --benchmark, or in the run (`babel run create --benchmark`)",
        )
    })
}

/// The benchmark of a file whose producer names its task (`named`, found in `from`):
/// `--benchmark` wins over that name, else the name, else the run's benchmark; a run that
/// names a benchmark accepts no other. `missing` says why there is none.
pub fn named_benchmark(
    context: &ImportContext<'_>,
    named: Option<&str>,
    from: &str,
    missing: &str,
) -> Result<String, AdapterError> {
    let (given, from) = match (&context.options.benchmark, named) {
        (Some(given), _) => (Some(given.as_str()), "--benchmark"),
        (None, Some(task)) => (Some(task), from),
        (None, None) => (None, ""),
    };
    match (given, context.run.benchmark.as_deref()) {
        (Some(given), Some(run)) if given != run => Err(AdapterError::new(
            FieldPath::root(),
            format!("benchmark {given:?} (from {from}) contradicts the run's benchmark {run:?}"),
        )
        .with_hint(format!(
            "pass --benchmark {run} to file this task under the run's benchmark, or import it into a run without one"
        ))),
        (Some(given), _) => Ok(given.to_owned()),
        (None, Some(run)) => Ok(run.to_owned()),
        (None, None) => Err(AdapterError::new(FieldPath::root(), missing)
            .with_hint("pass --benchmark B (or give the run a benchmark)")),
    }
}

/// A non-empty string the producer must give (`what` names it in the error).
pub fn required_text(
    value: Option<&Value>,
    path: FieldPath,
    what: &str,
) -> Result<String, AdapterError> {
    match value {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        other => Err(AdapterError::new(
            path,
            format!(
                "expected {what}, found {}",
                other.map_or("nothing".into(), describe)
            ),
        )),
    }
}

/// The language of a line that may name its own (the top-level member `language`): the
/// line's value and `--language` must agree where both are given.
pub fn language<'a>(
    own: Option<Cow<'a, str>>,
    options: &'a AdapterOptions,
) -> Result<Option<Cow<'a, str>>, AdapterError> {
    agree("language", own, options.language.as_deref(), "--language")
}

/// The script of a line that may name its own (the top-level member `script`): a strict
/// benchmark run's records must.
pub fn script<T>(own: Option<T>, run: &RunContext) -> Result<Option<T>, AdapterError> {
    if run.strict && own.is_none() {
        return Err(AdapterError::new(
            FieldPath::root().key("script"),
            "records of a strict benchmark run must name their script",
        ));
    }
    Ok(own)
}

/// Picks a context value that a record may also state as its top-level member `member`:
/// the record's own value wins when the context has none; when both exist they must
/// agree. (The member's path is built only for the error: this runs for every line.)
pub fn agree<'a>(
    member: &str,
    from_record: Option<Cow<'a, str>>,
    from_context: Option<&'a str>,
    context_name: &str,
) -> Result<Option<Cow<'a, str>>, AdapterError> {
    match (from_record, from_context) {
        (Some(own), Some(given)) if own != given => Err(AdapterError::new(
            FieldPath::root().key(member),
            format!("{member} {own:?} contradicts {context_name} {given:?}"),
        )),
        (Some(own), _) => Ok(Some(own)),
        (None, given) => Ok(given.map(Cow::Borrowed)),
    }
}
